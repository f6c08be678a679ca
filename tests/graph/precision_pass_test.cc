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
#include <string>
#include <vector>

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

// A tiny net with random weights, and the source its inference graphs read them from (the
// source points into this object, so it is neither copied nor moved).
struct TinyNet {
  TinyNet(const char* name, int side) : graph(build_model(tiny(name, side)).value()) {}
  TinyNet(const TinyNet&) = delete;
  TinyNet& operator=(const TinyNet&) = delete;
  const Graph graph;
  const ParamValues values = testing::random_param_values(graph, 5);
  const ParamSource source = testing::source_of(graph, values);
};

// The options of a bf16 inference graph: bf16 convolutions on bf16 activations.
InferenceGraphOptions bf16_graph_options() {
  InferenceGraphOptions options;
  options.compute = DType::bf16;
  options.activations = DType::bf16;
  return options;
}

class Bf16Activations : public ::testing::TestWithParam<Net> {};

TEST_P(Bf16Activations, ValuesAreBf16AndLogitsFollowFloat32) {
  const Net net = GetParam();
  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  if (!backend->supports_bf16_activations())
    GTEST_SKIP() << "this CPU has no AVX-512: oneDNN builds no bf16 pooling or batch norm here";
  const TinyNet tiny_net(net.name, net.side);
  const Graph& graph = tiny_net.graph;
  auto f32 = prepare_inference_graph(graph, tiny_net.source, {});
  auto bf16 = prepare_inference_graph(graph, tiny_net.source, bf16_graph_options());
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

// The float32 type a value has, or the Cast's input where a cast made it (the value its
// producer wrote).
DType written_type(const Graph& g, ValueId v) {
  const NodeId producer = g.values[static_cast<size_t>(v)].producer;
  if (producer == kNone) return g.values[static_cast<size_t>(v)].dtype;
  const Node& node = g.nodes[static_cast<size_t>(producer)];
  if (std::holds_alternative<CastDesc>(node.desc)) return written_type(g, node.inputs[0]);
  return g.values[static_cast<size_t>(v)].dtype;
}

// With a ConvComputeType (what the backend's timing says), the convolutions it calls float32
// compute in float32 on float32 activations; the others stay bf16; every other op takes the
// type of its largest input, and casts sit only where the two regions meet. Here the answer is
// a fixed rule (every third convolution in bf16), so the test does not depend on timings.
TEST(Bf16ActivationsPass, ConvolutionsTimedFasterInFloat32KeepFloat32Activations) {
  const TinyNet tiny_net("inception_v3", 75);
  const Graph& graph = tiny_net.graph;
  const ParamSource& source = tiny_net.source;
  InferenceGraphOptions options = bf16_graph_options();
  int asked = 0;
  options.conv_compute_type = [&](const Conv2dDesc& d) -> Result<DType> {
    EXPECT_EQ(d.compute, DType::bf16);
    EXPECT_EQ(d.activations, DType::bf16) << "asked as it would run in bf16";
    return asked++ % 3 == 0 ? DType::bf16 : DType::f32;
  };
  auto mixed = prepare_inference_graph(graph, source, options);
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  const Graph& g = mixed->graph;
  int convs = 0, f32_convs = 0, casts = 0;
  for (const Node& node : g.nodes) {
    if (std::holds_alternative<CastDesc>(node.desc)) {
      ++casts;
      continue;
    }
    std::vector<DType> inputs;
    for (ValueId in : node.inputs) inputs.push_back(g.values[static_cast<size_t>(in)].dtype);
    const DType out = g.values[static_cast<size_t>(node.outputs[0])].dtype;
    if (const auto* conv = std::get_if<Conv2dDesc>(&node.desc)) {
      const bool bf16 = convs++ % 3 == 0;
      f32_convs += bf16 ? 0 : 1;
      const DType want = bf16 ? DType::bf16 : DType::f32;
      EXPECT_EQ(conv->compute, want) << node.name;
      EXPECT_EQ(conv->activations, want) << node.name;
      EXPECT_EQ(out, want) << node.name;
      EXPECT_EQ(inputs[0], want) << node.name;
      continue;
    }
    if (std::holds_alternative<DenseDesc>(node.desc)) continue;
    // Follows its largest input as written (before any cast), and reads all in its type.
    ValueId largest = node.inputs[0];
    for (ValueId in : node.inputs)
      if (g.values[static_cast<size_t>(in)].shape.numel() >
          g.values[static_cast<size_t>(largest)].shape.numel())
        largest = in;
    EXPECT_EQ(out, written_type(g, largest)) << node.name;
    for (DType in : inputs) EXPECT_EQ(in, out) << node.name;
  }
  EXPECT_EQ(asked, convs) << "asked once per convolution";
  EXPECT_EQ(mixed->stats.float32_convolutions, f32_convs);
  EXPECT_EQ(mixed->stats.casts, casts);
  EXPECT_GT(casts, 2) << "the regions meet somewhere besides the images and the logits";

  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  if (!backend->supports_bf16_activations()) return;  // the graph above, not its numbers
  auto f32 = prepare_inference_graph(graph, source, {});
  ASSERT_TRUE(f32.ok()) << f32.status().message();
  const std::vector<float> images = testing::random_images(graph, 7);
  testing::expect_relative(logits_of(*backend, *mixed, images), logits_of(*backend, *f32, images),
                           3e-2, "mixed bf16 / f32 logits");
}

// Every convolution faster in float32 (as on a CPU without AMX at small batches): the graph is
// the float32 one, no value in bf16, no cast, the same logits bit for bit.
TEST(Bf16ActivationsPass, AllConvolutionsInFloat32IsTheFloat32Graph) {
  const TinyNet tiny_net("inception_v3", 75);
  const Graph& graph = tiny_net.graph;
  const ParamSource& source = tiny_net.source;
  InferenceGraphOptions options = bf16_graph_options();
  options.conv_compute_type = [](const Conv2dDesc&) -> Result<DType> { return DType::f32; };
  options.time_algorithms = false;  // the float32 graph's kernels, not timed ones
  auto all_f32 = prepare_inference_graph(graph, source, options);
  ASSERT_TRUE(all_f32.ok()) << all_f32.status().message();
  EXPECT_EQ(all_f32->stats.bf16_activations, 0);
  EXPECT_EQ(all_f32->stats.casts, 0);
  for (const ValueInfo& value : all_f32->graph.values) EXPECT_NE(value.dtype, DType::bf16);

  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  InferenceGraphOptions f32_options;
  f32_options.time_algorithms = false;
  auto f32 = prepare_inference_graph(graph, source, f32_options);
  ASSERT_TRUE(f32.ok()) << f32.status().message();
  const std::vector<float> images = testing::random_images(graph, 7);
  EXPECT_EQ(logits_of(*backend, *all_f32, images), logits_of(*backend, *f32, images));
}

// The callback's error is the pass's.
TEST(Bf16ActivationsPass, ComputeTypeErrorsReachTheCaller) {
  const Graph graph = build_model(tiny("inception_v3", 75)).value();
  ActivationPrecisionStats stats;
  auto result = store_activations_in_bf16(
      graph, &stats, [](const Conv2dDesc&) -> Result<DType> { return error("no timing today"); });
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("no timing today"), std::string::npos);
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
