// The executor on a mock backend: order of kernels, pointers that stay valid from forward to
// backward under the memory plan, the gradient-summing rule, zero gradients for parameters
// no loss reads. (Numerical correctness is executor_cpu_test.cc.)
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "graph/compiled_graph.h"
#include "graph/passes.h"
#include "mock_backend.h"
#include "test_graphs.h"

namespace ic {
namespace {

struct Arenas {
  std::vector<float> weights, state, grads;
  ParamBinding binding() { return {weights.data(), state.data(), grads.data()}; }
};

Arenas make_arenas(const ParamLayout& layout) {
  Arenas a;
  a.weights.assign(layout.trainable_count, 0.5f);
  a.state.assign(layout.state_count, 1.f);
  a.grads.assign(layout.trainable_count, std::nanf(""));
  return a;
}

// Node names of the kernels in compile order (the optimised graph without alias nodes).
std::vector<std::string> kernel_names(const Graph& graph) {
  std::vector<std::string> names;
  for (const Node& node : optimize_graph(graph).nodes)
    if (!std::holds_alternative<ReshapeDesc>(node.desc)) names.push_back(node.name);
  return names;
}

TEST(ExecutorMock, GradientsAreSummedOverReadersAndBuffersSurviveUntilBackward) {
  const OpKernel::BackwardReads configs[] = {{true, true}, {true, false}, {false, true}};
  for (const auto& reads : configs) {
    const Graph graph = testing::small_graph({.dead_branch = true});
    const ParamLayout layout = ParamLayout::plan(graph);
    Arenas arenas = make_arenas(layout);
    testing::MockBackend backend;
    backend.reads = reads;
    auto compiled = CompiledGraph::compile(graph, backend, layout, arenas.binding());
    ASSERT_TRUE(compiled.ok()) << compiled.status().message();
    auto& cg = **compiled;
    ASSERT_NE(cg.images(), nullptr);
    ASSERT_NE(cg.labels(), nullptr);
    for (int step = 0; step < 2; ++step) {
      cg.forward(StepContext{1, step});
      cg.backward(StepContext{1, step});
    }
    for (const std::string& f : backend.log.failures) ADD_FAILURE() << f;

    const auto names = kernel_names(graph);
    ASSERT_EQ(names.size(), backend.log.descs.size());
    // What each kernel's backward saw as its output gradient: the number of input slots that
    // read its output (each mock backward writes 1s); -1 for losses; -2 never ran.
    const std::map<std::string, float> expected{
        {"Net/Conv2d_1a_3x3", 1.f},
        {"Net/Conv2d_1a_3x3/BatchNorm", 3.f},  // max pool, avg pool, concat
        {"Net/Mixed/Branch_0/MaxPool", 1.f},
        {"Net/Mixed/Branch_0/Conv2d_0a_1x1", 1.f},
        {"Net/Mixed/Branch_0/Conv2d_0a_1x1/BatchNorm", 1.f},
        {"Net/Mixed/Branch_1/AvgPool", 1.f},
        {"Net/Mixed/Branch_1/Conv2d_0b_1x1", 1.f},
        {"Net/Mixed/Branch_1/Conv2d_0b_1x1/BatchNorm", 1.f},
        {"Net/Dead/Conv2d_0a_1x1", -2.f},
        {"Net/Mixed", 1.f},
        {"Net/Logits/AvgPool", 2.f},  // through the reshape alias, and the aux dense
        {"Net/Logits/Dropout", 1.f},
        {"Net/Logits/Conv2d_1c_1x1", 1.f},  // through the squeeze alias
        {"Net/Loss", -1.f},
        {"Net/Aux", 1.f},
        {"Net/AuxLoss", -1.f},
    };
    ASSERT_EQ(expected.size(), names.size());
    for (size_t k = 0; k < names.size(); ++k)
      EXPECT_EQ(backend.log.output_grad_seen[k], expected.at(names[k])) << names[k];

    // Forward in node order, backward in reverse, the dead conv skipped in backward.
    ASSERT_EQ(backend.log.forward_order.size(), 2 * names.size());
    ASSERT_EQ(backend.log.backward_order.size(), 2 * (names.size() - 1));
    EXPECT_EQ(backend.log.backward_order.front(), "softmax_cross_entropy");
    EXPECT_EQ(backend.log.backward_order[names.size() - 2], "conv2d");

    // Every reached parameter's gradient was written (1); the dead conv's is zero.
    for (size_t p = 0; p < graph.params.size(); ++p) {
      if (!graph.params[p].trainable) continue;
      const float want = graph.params[p].name == "Net/Dead/Conv2d_0a_1x1/weights" ? 0.f : 1.f;
      for (int64_t e = 0; e < graph.params[p].shape.numel(); ++e)
        ASSERT_EQ(arenas.grads[layout.offset[p] + static_cast<size_t>(e)], want)
            << graph.params[p].name;
    }
    // Only the conv that reads the images skips its input gradient.
    for (size_t k = 0; k < names.size(); ++k)
      EXPECT_EQ(backend.log.needs_input_grad[k], names[k] != "Net/Conv2d_1a_3x3") << names[k];
    EXPECT_LT(cg.activation_bytes(), 200000u);
    EXPECT_NE(cg.summary().find("1 BN+ReLU fused"), std::string::npos) << cg.summary();
  }
}

TEST(ExecutorMock, AValueReadTwiceByOneNodeGetsBothContributions) {
  GraphBuilder b(true);
  const ValueId images = b.images(Shape{2, 3, 3, 2});
  const ValueId labels = b.labels(2);
  GraphBuilder::ConvOptions c;
  c.filters = 4;
  const ValueId y = b.conv2d(images, c, "C");
  const ValueId s = b.add(y, y, true, "Twice");
  const ValueId logits =
      b.dense(b.global_avg_pool(s, "Pool"), 3, ParamInit{ParamInit::Kind::zeros, 0.f}, "D");
  b.set_logits(logits);
  b.softmax_cross_entropy(logits, labels, 0.f, 1.f, "Loss");
  const Graph graph = b.finish();
  const ParamLayout layout = ParamLayout::plan(graph);
  Arenas arenas = make_arenas(layout);
  testing::MockBackend backend;
  auto compiled = CompiledGraph::compile(graph, backend, layout, arenas.binding());
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  (*compiled)->forward({});
  (*compiled)->backward({});
  for (const std::string& f : backend.log.failures) ADD_FAILURE() << f;
  EXPECT_EQ(backend.log.output_grad_seen[0], 2.f);  // conv: both add slots
  // The add wrote its two input gradients to different buffers.
  const OpBindings& add = backend.log.bindings[1];
  ASSERT_EQ(add.input_grads.size(), 2u);
  EXPECT_NE(add.input_grads[0], add.input_grads[1]);
  EXPECT_EQ(add.inputs[0], add.inputs[1]);
}

TEST(ExecutorMock, AParameterReadByTwoNodesGetsTheSumOfBothGradients) {
  GraphBuilder b(true);
  const ValueId images = b.images(Shape{2, 3, 3, 4});
  const ValueId labels = b.labels(2);
  GraphBuilder::ConvOptions c;
  c.filters = 4;
  const ValueId y1 = b.conv2d(images, c, "A");
  const ValueId y2 = b.conv2d(y1, c, "B");
  const ValueId logits =
      b.dense(b.global_avg_pool(y2, "Pool"), 3, ParamInit{ParamInit::Kind::zeros, 0.f}, "D");
  b.set_logits(logits);
  b.softmax_cross_entropy(logits, labels, 0.f, 1.f, "Loss");
  Graph graph = b.finish();
  // Tie B's kernel to A's (same shape): B's own weights are then read by nobody.
  const ParamId a = graph.find_param("A/weights"), own = graph.find_param("B/weights");
  graph.nodes[1].params[0] = a;
  const ParamLayout layout = ParamLayout::plan(graph);
  Arenas arenas = make_arenas(layout);
  testing::MockBackend backend;
  auto compiled = CompiledGraph::compile(graph, backend, layout, arenas.binding());
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  (*compiled)->forward({});
  (*compiled)->backward({});
  for (const std::string& f : backend.log.failures) ADD_FAILURE() << f;
  EXPECT_EQ(arenas.grads[layout.offset[static_cast<size_t>(a)]], 2.f);
  EXPECT_EQ(arenas.grads[layout.offset[static_cast<size_t>(own)]], 0.f);
  // B (backward first) writes the gradient directly, A through scratch.
  EXPECT_EQ(backend.log.bindings[1].param_grads[0],
            arenas.grads.data() + layout.offset[static_cast<size_t>(a)]);
  EXPECT_NE(backend.log.bindings[0].param_grads[0], backend.log.bindings[1].param_grads[0]);
}

TEST(ExecutorMock, InferenceGraphsHaveNoBackwardAndDropNoOpDropout) {
  const Graph graph = testing::small_graph({.training = false});
  const ParamLayout layout = ParamLayout::plan(graph);
  Arenas arenas = make_arenas(layout);
  testing::MockBackend backend;
  ParamBinding binding = arenas.binding();
  binding.grads = nullptr;
  auto compiled = CompiledGraph::compile(graph, backend, layout, binding);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  (*compiled)->forward({});
  for (const std::string& f : backend.log.failures) ADD_FAILURE() << f;
  for (const std::string& d : backend.log.descs) EXPECT_NE(d, "dropout");
  for (const OpBindings& b : backend.log.bindings) {
    EXPECT_TRUE(b.input_grads.empty());
    EXPECT_TRUE(b.param_grads.empty());
  }
  for (size_t k = 0; k < backend.log.descs.size(); ++k) {
    if (backend.log.descs[k] == "conv2d" || backend.log.descs[k] == "dense") {
      EXPECT_FALSE(backend.log.needs_input_grad[k]);
    }
  }
  EXPECT_NE((*compiled)->logits(), nullptr);
  EXPECT_EQ((*compiled)->loss_terms().size(), 2u);
}

TEST(ExecutorMock, RejectsTrainingGraphsWithoutGradientArenaAndBadLayouts) {
  const Graph graph = testing::small_graph({});
  const ParamLayout layout = ParamLayout::plan(graph);
  Arenas arenas = make_arenas(layout);
  testing::MockBackend backend;
  ParamBinding binding = arenas.binding();
  binding.grads = nullptr;
  auto no_grads = CompiledGraph::compile(graph, backend, layout, binding);
  ASSERT_FALSE(no_grads.ok());
  EXPECT_NE(no_grads.status().message().find("grads"), std::string::npos);
  ParamLayout short_layout = layout;
  short_layout.offset.pop_back();
  auto bad = CompiledGraph::compile(graph, backend, short_layout, arenas.binding());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("layout"), std::string::npos);
}

}  // namespace
}  // namespace ic
