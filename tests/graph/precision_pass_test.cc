// bf16 activations in an inference graph (graph/precision_pass.h) on tiny Inception v3,
// Inception v4 and ResNet-50 (depth multiplier 0.25, random weights): every value between two
// ops is bf16, casts only where the images enter and where the f32 ops (the logits' dense layer,
// or the logits leaving) read, and the logits within 3% of the logits' scale of the float32
// inference graph's: bf16 keeps 8 bits of mantissa, so each of the ~100 layers rounds its
// output by up to 2^-9 relative, and the errors add up through the depth.
#include "graph/precision_pass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "graph/inference_graph.h"
#include "inference_test_util.h"
#include "models/model.h"

namespace ic {
namespace {

ModelOptions tiny(const char* name, int side) {
  ModelOptions o = default_model_options(name).value();
  o.batch_size = 2;
  o.height = o.width = side;
  o.num_classes = 10;
  o.depth_multiplier = 0.25f;
  o.training = false;
  o.build_losses = false;
  return o;
}

std::vector<float> logits_of(Backend& backend, const InferenceGraph& inference,
                             const std::vector<float>& images) {
  auto params = upload_params(backend, inference);
  EXPECT_TRUE(params.ok()) << params.status().message();
  if (!params.ok()) return {};
  auto compiled =
      CompiledGraph::compile(inference.graph, backend, params->layout, params->binding());
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (!compiled.ok()) return {};
  backend.upload((*compiled)->images(), images.data(), images.size() * sizeof(float));
  (*compiled)->forward({});
  std::vector<float> logits(static_cast<size_t>(
      inference.graph.values[static_cast<size_t>(inference.graph.logits)].shape.numel()));
  backend.download(logits.data(), (*compiled)->logits(), logits.size() * sizeof(float));
  return logits;
}

struct Net {
  const char* name;
  int side;
};

class Bf16Activations : public ::testing::TestWithParam<Net> {};

TEST_P(Bf16Activations, ValuesAreBf16AndLogitsFollowFloat32) {
  const Net net = GetParam();
  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  if (!backend->supports_bf16_activations())
    GTEST_SKIP() << "this CPU has no AVX-512: oneDNN builds no bf16 pooling or batch norm here";
  const Graph graph = build_model(tiny(net.name, net.side)).value();
  const ParamValues values = testing::random_param_values(graph, 5);
  const ParamSource source = testing::source_of(graph, values);

  InferenceGraphOptions f32_options;
  InferenceGraphOptions bf16_options;
  bf16_options.compute = DType::bf16;
  bf16_options.activations = DType::bf16;
  auto f32 = prepare_inference_graph(graph, source, f32_options);
  auto bf16 = prepare_inference_graph(graph, source, bf16_options);
  ASSERT_TRUE(f32.ok()) << f32.status().message();
  ASSERT_TRUE(bf16.ok()) << bf16.status().message();

  // Types: the images and logits stay f32; every other value a node writes is bf16 unless an
  // f32-only op (dense) wrote it; two casts (the images in, and the logits or the dense
  // layer's input out).
  const Graph& g = bf16->graph;
  EXPECT_EQ(g.values[static_cast<size_t>(g.images)].dtype, DType::f32);
  EXPECT_EQ(g.values[static_cast<size_t>(g.logits)].dtype, DType::f32);
  EXPECT_EQ(bf16->stats.casts, 2);
  for (const Node& node : g.nodes) {
    const bool f32_op = std::holds_alternative<DenseDesc>(node.desc) ||
                        (std::holds_alternative<CastDesc>(node.desc) &&
                         std::get<CastDesc>(node.desc).to == DType::f32);
    for (ValueId out : node.outputs) {
      EXPECT_EQ(g.values[static_cast<size_t>(out)].dtype, f32_op ? DType::f32 : DType::bf16)
          << node.name;
    }
    // An f32 value is the logits, or what the dense layer that writes them reads.
    if (f32_op && node.outputs[0] != g.logits) {
      for (const Node& reader : g.nodes) {
        if (std::find(reader.inputs.begin(), reader.inputs.end(), node.outputs[0]) ==
            reader.inputs.end())
          continue;
        EXPECT_TRUE(std::holds_alternative<DenseDesc>(reader.desc)) << reader.name;
        EXPECT_EQ(reader.outputs[0], g.logits) << reader.name;
      }
    }
  }
  int bf16_values = 0;
  for (const ValueInfo& value : g.values) bf16_values += value.dtype == DType::bf16 ? 1 : 0;
  EXPECT_EQ(bf16->stats.bf16_activations + 1, bf16_values)
      << "the pass's count, and the images' cast";

  const std::vector<float> images = testing::random_images(graph, 7);
  const std::vector<float> want = logits_of(*backend, *f32, images);
  const std::vector<float> got = logits_of(*backend, *bf16, images);
  const double worst = testing::expect_relative(got, want, 3e-2, "bf16 logits");
  std::printf("%s: worst |bf16 - f32| / max|logit| = %.2e (%d values in bf16, %d casts)\n",
              net.name, worst, bf16->stats.bf16_activations, bf16->stats.casts);
}

INSTANTIATE_TEST_SUITE_P(Models, Bf16Activations,
                         ::testing::Values(Net{"inception_v3", 75}, Net{"inception_v4", 75},
                                           Net{"resnet50", 64}),
                         [](const auto& info) { return std::string(info.param.name); });

// A training graph: its losses read f32 logits (the main and the aux head's), every other value
// the model writes is bf16, and the labels stay int32.
TEST(Bf16ActivationsPass, TrainingGraphsKeepTheLossInFloat32) {
  ModelOptions o = tiny("inception_v3", 75);
  o.training = true;
  o.build_losses = true;
  o.activations = DType::bf16;
  const Graph g = build_model(o).value();
  EXPECT_EQ(g.values[static_cast<size_t>(g.labels)].dtype, DType::i32);
  int losses = 0;
  for (const Node& node : g.nodes) {
    if (!std::holds_alternative<SoftmaxCrossEntropyDesc>(node.desc)) continue;
    ++losses;
    EXPECT_EQ(g.values[static_cast<size_t>(node.inputs[0])].dtype, DType::f32) << node.name;
    EXPECT_EQ(g.values[static_cast<size_t>(node.outputs[0])].dtype, DType::f32) << node.name;
  }
  EXPECT_EQ(losses, 2);
}

TEST(Bf16ActivationsPass, RefusesInt8Layers) {
  Graph graph = build_model(tiny("inception_v3", 75)).value();
  for (Node& node : graph.nodes) {
    if (auto* conv = std::get_if<Conv2dDesc>(&node.desc)) {
      conv->int8 = Int8Conv{1.f, std::vector<float>(static_cast<size_t>(conv->out_channels), 1.f)};
      break;
    }
  }
  EXPECT_FALSE(store_activations_in_bf16(graph).ok());
}

}  // namespace
}  // namespace ic
