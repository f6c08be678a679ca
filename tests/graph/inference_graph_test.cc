// prepare_inference_graph on tiny Inception v3, Inception v4 and ResNet-50 (depth multiplier
// 0.25, small images) with random weights and non-trivial moving statistics: every batch
// norm folded, every ReLU fused, the average pools before a 1x1 convolution moved after it
// (graph/inference_passes.h), the aux head gone, and the logits those of the unfolded
// evaluation graph within 1e-5 (relative to the logits' scale), at batch 1 and batch 4, with
// fixed and with timed convolution implementations. The graphs of both batch sizes share one
// upload of the values.
#include "graph/inference_graph.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "inference_test_util.h"
#include "models/model.h"

namespace ic {
namespace {

using testing::count_ops;

struct TinyNet {
  const char* name;
  int side;
};

ModelOptions tiny_options(const TinyNet& net, int64_t batch) {
  ModelOptions o = default_model_options(net.name).value();
  o.batch_size = batch;
  o.height = o.width = net.side;
  o.num_classes = 10;
  o.depth_multiplier = 0.25f;
  o.training = false;
  o.build_losses = false;
  o.aux_logits = true;  // as a checkpoint has it: the pass drops the head
  return o;
}

int batch_norms(const Graph& g) {
  return count_ops(g, "batch_norm") + count_ops(g, "batch_norm+relu");
}

class TinyNetworks : public ::testing::TestWithParam<TinyNet> {};

TEST_P(TinyNetworks, FoldedGraphMatchesTheEvaluationGraph) {
  const TinyNet net = GetParam();
  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  const Graph one = build_model(tiny_options(net, 1)).value();
  const ParamValues values = testing::random_param_values(one, 11);
  const ParamSource source = testing::source_of(one, values);

  // Batch 1 and 4 with the fixed implementations, batch 4 again with timed ones; all three
  // graphs read one upload of the values.
  const std::pair<int64_t, bool> runs[] = {{1, false}, {4, false}, {4, true}};
  std::unique_ptr<DeviceParams> shared;
  std::vector<std::string> param_names;
  std::vector<std::unique_ptr<CompiledGraph>> graphs;  // all alive: they share converted weights
  std::vector<std::vector<float>> inputs, outputs;
  for (const auto& [batch, timed] : runs) {
    InferenceGraphOptions options;
    options.time_algorithms = timed;
    SCOPED_TRACE(std::string(net.name) + " batch " + std::to_string(batch) +
                 (timed ? " timed" : " fixed"));
    const Graph graph = build_model(tiny_options(net, batch)).value();
    auto inference = prepare_inference_graph(graph, source, options);
    ASSERT_TRUE(inference.ok()) << inference.status().message();
    const Graph& f = inference->graph;

    // Node counts: no batch norm or dropout left, one conv+relu per batch norm with a ReLU on
    // the logits' path except those whose average pool now follows them (each then followed by
    // a ReLU node: Inception's Branch_3), and the aux head gone.
    const int moved = inference->stats.pools_after_conv;
    EXPECT_EQ(batch_norms(f), 0);
    EXPECT_EQ(count_ops(f, "dropout"), 0);
    EXPECT_EQ(count_ops(f, "relu"), moved);
    if (std::string(net.name) != "resnet50") {
      EXPECT_GT(moved, 0) << "every Inception block but the reductions has a Branch_3 pool";
    }
    EXPECT_GT(inference->stats.folded_batch_norm, 0);
    EXPECT_EQ(f.endpoint("AuxLogits"), kNone);
    if (graph.endpoint("AuxLogits") != kNone) {
      EXPECT_GT(inference->stats.removed_dead_nodes, 0);
    }
    int relu_batch_norms = 0, plain_batch_norms = 0;
    {
      // The same graph pruned but unfolded says how many of each the logits need.
      InferenceGraphOptions unfolded = options;
      unfolded.fold_batch_norm = false;
      auto kept = prepare_inference_graph(graph, source, unfolded);
      ASSERT_TRUE(kept.ok());
      relu_batch_norms = count_ops(kept->graph, "batch_norm+relu");
      plain_batch_norms = count_ops(kept->graph, "batch_norm");
      EXPECT_EQ(kept->graph.nodes.size() + static_cast<size_t>(moved),
                f.nodes.size() + static_cast<size_t>(relu_batch_norms + plain_batch_norms));
    }
    EXPECT_EQ(inference->stats.folded_batch_norm, relu_batch_norms + plain_batch_norms);
    EXPECT_EQ(inference->stats.fused_conv_relu, relu_batch_norms);
    EXPECT_EQ(count_ops(f, "conv2d+relu"), relu_batch_norms - moved);
    if (batch == 1) {
      std::printf("%s: %zu nodes -> %zu (%d batch norms folded, %d ReLUs fused, %d dead)\n",
                  net.name, graph.nodes.size(), f.nodes.size(), inference->stats.folded_batch_norm,
                  inference->stats.fused_conv_relu, inference->stats.removed_dead_nodes);
    }

    // One upload serves every batch size: same parameters, same values.
    std::vector<std::string> names;
    for (const ParamInfo& p : f.params) names.push_back(p.name);
    if (!shared) {
      auto uploaded = upload_params(*backend, *inference);
      ASSERT_TRUE(uploaded.ok()) << uploaded.status().message();
      shared = std::make_unique<DeviceParams>(std::move(uploaded).value());
      param_names = names;
    }
    EXPECT_EQ(names, param_names);

    auto compiled = CompiledGraph::compile(f, *backend, shared->layout, shared->binding());
    ASSERT_TRUE(compiled.ok()) << compiled.status().message();
    const std::vector<float> images = testing::random_images(graph, 20 + batch);
    backend->upload((*compiled)->images(), images.data(), images.size() * sizeof(float));
    (*compiled)->forward({});
    const auto count = static_cast<size_t>(batch * 10);
    std::vector<float> folded(count);
    backend->download(folded.data(), (*compiled)->logits(), count * sizeof(float));

    const std::vector<float> unfolded = testing::run_graph(*backend, graph, values, images);
    const double worst = testing::expect_relative(folded, unfolded, 1e-5, "logits");
    std::printf("%s batch %lld %s: worst |folded - unfolded| / max|logit| = %.2e\n", net.name,
                static_cast<long long>(batch), timed ? "timed" : "fixed", worst);
    graphs.push_back(std::move(compiled).value());
    inputs.push_back(images);
    outputs.push_back(folded);
  }
  // Each graph again, after the others' first runs: the same logits.
  for (size_t k = 0; k < graphs.size(); ++k) {
    backend->upload(graphs[k]->images(), inputs[k].data(), inputs[k].size() * sizeof(float));
    graphs[k]->forward({});
    std::vector<float> again(outputs[k].size());
    backend->download(again.data(), graphs[k]->logits(), again.size() * sizeof(float));
    EXPECT_EQ(again, outputs[k]) << net.name << " graph " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TinyNetworks,
                         ::testing::Values(TinyNet{"inception_v3", 75}, TinyNet{"inception_v4", 75},
                                           TinyNet{"resnet50", 64}),
                         [](const auto& info) { return std::string(info.param.name); });

// The model zoo's activations (MobileNet's ReLU6, EfficientNet's swish and its squeeze-and-
// excitation's sigmoid) become their convolution's post-op: no such node is left where a
// convolution alone feeds it, and the logits are the evaluation graph's within 1e-5.
struct ZooNet {
  const char* name;
  const char* activation;  // the op name of what the pass fuses
};

// A small inference graph of the zoo model `name`: `batch` images of size x size, 10 classes,
// depth multiplier 0.5.
Graph small_zoo_graph(const char* name, int64_t size, int64_t batch) {
  ModelOptions o = default_model_options(name).value();
  o.batch_size = batch;
  o.height = o.width = size;
  o.num_classes = 10;
  o.depth_multiplier = 0.5f;
  o.training = false;
  o.build_losses = false;
  return build_model(o).value();
}

// Runs `inference` (prepared from `graph` with `values`) on random images and checks its logits
// against `graph` evaluated as it is, within 1e-5 of their scale; returns the worst difference.
double expect_logits_of_the_unfused_graph(Backend& backend, const Graph& graph,
                                          const ParamValues& values,
                                          const InferenceGraph& inference, uint32_t seed) {
  auto params = upload_params(backend, inference);
  EXPECT_TRUE(params.ok()) << params.status().message();
  if (!params.ok()) return 1;
  auto compiled =
      CompiledGraph::compile(inference.graph, backend, params->layout, params->binding());
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (!compiled.ok()) return 1;
  const std::vector<float> images = testing::random_images(graph, seed);
  backend.upload((*compiled)->images(), images.data(), images.size() * sizeof(float));
  (*compiled)->forward({});
  const Shape logits_shape = graph.values[static_cast<size_t>(graph.logits)].shape;
  std::vector<float> logits(static_cast<size_t>(logits_shape.numel()));
  backend.download(logits.data(), (*compiled)->logits(), logits.size() * sizeof(float));
  const std::vector<float> unfused = testing::run_graph(backend, graph, values, images);
  return testing::expect_relative(logits, unfused, 1e-5, "logits");
}

class ZooActivations : public ::testing::TestWithParam<ZooNet> {};

TEST_P(ZooActivations, FuseIntoTheirConvolutions) {
  const ZooNet net = GetParam();
  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  const Graph graph = small_zoo_graph(net.name, 64, 2);
  const ParamValues values = testing::random_param_values(graph, 17);
  auto inference = prepare_inference_graph(graph, testing::source_of(graph, values), {});
  ASSERT_TRUE(inference.ok()) << inference.status().message();
  const Graph& f = inference->graph;
  // Each activation node is either left (it reads something other than a convolution alone)
  // or now a convolution's post-op; the model's main one is fused somewhere.
  int fused = 0, main_fused = 0;
  for (const std::string a : {"relu6", "sigmoid", "swish"}) {
    const int in_convs = count_ops(f, "conv2d+" + a) + count_ops(f, "grouped_conv2d+" + a);
    EXPECT_EQ(count_ops(f, a) + in_convs, count_ops(graph, a)) << a;
    fused += in_convs;
    if (a == net.activation) main_fused = in_convs;
  }
  EXPECT_EQ(fused, inference->stats.fused_conv_activation);
  EXPECT_GT(main_fused, 0);
  const double worst = expect_logits_of_the_unfused_graph(*backend, graph, values, *inference, 5);
  std::printf(
      "%s: %d activations fused (%d of %d %s), worst |fused - unfused| / max|logit| = "
      "%.2e\n",
      net.name, fused, main_fused, count_ops(graph, net.activation), net.activation, worst);
}

INSTANTIATE_TEST_SUITE_P(Models, ZooActivations,
                         ::testing::Values(ZooNet{"mobilenet_v1", "relu6"},
                                           ZooNet{"mobilenet_v2", "relu6"},
                                           ZooNet{"efficientnet_b0", "swish"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A depthwise 3x3 convolution after a pointwise one runs inside it where the backend fuses it
// (fuse_depthwise_into_pointwise): MobileNet v2's expansions, EfficientNet-B0's 3x3 blocks and
// MobileNet v1's pointwise layers (named end points, whose names go); strides 1 and 2, at a
// size whose maps turn odd (72: 36, 18, 9, 5 ...: TF's SAME then pads a stride-2 layer on
// both sides) and one whose maps stay even (64: the top and left get no padding). The logits
// are the evaluation graph's within 1e-5.
struct ZooDepthwiseCase {
  const char* name;
  int64_t size;
};

class ZooDepthwise : public ::testing::TestWithParam<ZooDepthwiseCase> {};

TEST_P(ZooDepthwise, FusesIntoThePointwiseBefore) {
  const ZooDepthwiseCase net = GetParam();
  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  const Graph graph = small_zoo_graph(net.name, net.size, 2);
  const ParamValues values = testing::random_param_values(graph, 23);
  InferenceGraphOptions options;
  // Untimed, every pair the backend can fuse is fused (timed, only those that run faster so).
  options.time_algorithms = false;
  options.fuses_depthwise = [&](const Conv2dDesc& d) { return backend->fuses_depthwise(d); };
  auto inference = prepare_inference_graph(graph, testing::source_of(graph, values), options);
  ASSERT_TRUE(inference.ok()) << inference.status().message();
  const Graph& f = inference->graph;
  int fused = 0;
  for (const char* post : {"", "+relu", "+relu6", "+sigmoid", "+swish"})
    fused += count_ops(f, std::string("conv2d") + post + "+depthwise");
  EXPECT_GT(fused, 0);
  EXPECT_EQ(fused, inference->stats.fused_depthwise);
  int depthwise_before = 0, depthwise_after = 0;
  for (const Node& node : graph.nodes)
    if (const auto* c = std::get_if<Conv2dDesc>(&node.desc)) depthwise_before += c->depthwise();
  for (const Node& node : f.nodes)
    if (const auto* c = std::get_if<Conv2dDesc>(&node.desc)) depthwise_after += c->depthwise();
  EXPECT_EQ(depthwise_after, depthwise_before - fused);
  // Every endpoint left names a value still produced (or the images).
  for (const auto& [name, value] : f.endpoints)
    EXPECT_TRUE(value == f.images || f.values[static_cast<size_t>(value)].producer != kNone)
        << name;
  const double worst = expect_logits_of_the_unfused_graph(*backend, graph, values, *inference, 7);
  std::printf(
      "%s at %lld: %d of %d depthwise convolutions fused, worst |fused - unfused| / "
      "max|logit| = %.2e\n",
      net.name, static_cast<long long>(net.size), fused, depthwise_before, worst);
}

INSTANTIATE_TEST_SUITE_P(
    Models, ZooDepthwise,
    ::testing::Values(ZooDepthwiseCase{"mobilenet_v1", 64}, ZooDepthwiseCase{"mobilenet_v1", 72},
                      ZooDepthwiseCase{"mobilenet_v2", 64}, ZooDepthwiseCase{"mobilenet_v2", 72},
                      ZooDepthwiseCase{"efficientnet_b0", 72}),
    [](const auto& info) {
      return std::string(info.param.name) + "_" + std::to_string(info.param.size);
    });

// Without the backend's word, or in a graph without folding, nothing is fused.
TEST(ZooDepthwiseOff, NothingFusesUnlessTheBackendAccepts) {
  const Graph graph = small_zoo_graph("mobilenet_v2", 64, 1);
  const ParamValues values = testing::random_param_values(graph, 29);
  InferenceGraphOptions options;
  options.fuses_depthwise = [](const Conv2dDesc&) { return false; };
  auto refused = prepare_inference_graph(graph, testing::source_of(graph, values), options);
  ASSERT_TRUE(refused.ok()) << refused.status().message();
  EXPECT_EQ(refused->stats.fused_depthwise, 0);
  options.fuses_depthwise = [](const Conv2dDesc&) { return true; };
  options.fold_batch_norm = false;
  auto unfolded = prepare_inference_graph(graph, testing::source_of(graph, values), options);
  ASSERT_TRUE(unfolded.ok()) << unfolded.status().message();
  EXPECT_EQ(unfolded->stats.fused_depthwise, 0);
}

// Full-size networks at batch 1 with the implementations timing picks: on an AVX2 CPU most of
// Inception v3's 1x7, 7x1, 1x3, 3x1 and 3x3 stride-1 layers and ResNet-50's 3x3 ones then run
// Winograd (backend/cpu/winograd_toom_cook_conv.h, winograd_conv.h), whose transforms round more
// than the direct convolution; the logits still match the evaluation graph's within 1e-5 of
// the largest.
class FullSizeNetworks : public ::testing::TestWithParam<const char*> {};

TEST_P(FullSizeNetworks, TimedLayersKeepTheLogits) {
  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  ModelOptions o = default_model_options(GetParam()).value();
  o.batch_size = 1;
  o.training = false;
  o.build_losses = false;
  const Graph graph = build_model(o).value();
  const ParamValues values = testing::random_param_values(graph, 11);
  auto inference = prepare_inference_graph(graph, testing::source_of(graph, values), {});
  ASSERT_TRUE(inference.ok()) << inference.status().message();
  auto uploaded = upload_params(*backend, *inference);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status().message();
  auto compiled =
      CompiledGraph::compile(inference->graph, *backend, uploaded->layout, uploaded->binding());
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  const std::vector<float> images = testing::random_images(graph, 21);
  backend->upload((*compiled)->images(), images.data(), images.size() * sizeof(float));
  (*compiled)->forward({});
  std::vector<float> logits(static_cast<size_t>(o.num_classes));
  backend->download(logits.data(), (*compiled)->logits(), logits.size() * sizeof(float));
  const std::vector<float> unfolded = testing::run_graph(*backend, graph, values, images);
  const double worst = testing::expect_relative(logits, unfolded, 1e-5, "logits");
  std::printf("%s timed: worst |folded - unfolded| / max|logit| = %.2e\n", GetParam(), worst);
}

INSTANTIATE_TEST_SUITE_P(Models, FullSizeNetworks, ::testing::Values("inception_v3", "resnet50"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace ic
