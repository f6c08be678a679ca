#include "graph/passes.h"

#include <gtest/gtest.h>

#include "graph/autodiff.h"
#include "inference_test_util.h"
#include "test_graphs.h"

namespace ic {
namespace {

using testing::count_ops;

void expect_producers_consistent(const Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId out : g.nodes[i].outputs)
      EXPECT_EQ(g.values[static_cast<size_t>(out)].producer, static_cast<NodeId>(i));
  // Topological: every input is produced earlier or is a graph input.
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId in : g.nodes[i].inputs) {
      const NodeId p = g.values[static_cast<size_t>(in)].producer;
      if (p == kNone) {
        EXPECT_TRUE(in == g.images || in == g.labels) << g.nodes[i].name;
      } else {
        EXPECT_LT(p, static_cast<NodeId>(i)) << g.nodes[i].name;
      }
    }
}

TEST(FuseBatchNormRelu, FoldsTheExplicitReluAndKeepsBuilderFusedOnes) {
  const Graph g = testing::small_graph({});
  ASSERT_EQ(count_ops(g, "relu"), 1);
  ASSERT_EQ(count_ops(g, "batch_norm+relu"), 2);
  PassStats stats;
  const Graph f = fuse_batch_norm_relu(g, &stats);
  EXPECT_EQ(stats.fused_batch_norm_relu, 1);
  EXPECT_EQ(count_ops(f, "relu"), 0);
  EXPECT_EQ(count_ops(f, "batch_norm"), 0);
  EXPECT_EQ(count_ops(f, "batch_norm+relu"), 3);
  EXPECT_EQ(f.nodes.size(), g.nodes.size() - 1);
  expect_producers_consistent(f);
  // The fused BN writes the Relu's value, so the endpoint and its readers are unchanged.
  const ValueId x1 = f.endpoint("Conv2d_1a_3x3");
  const NodeId bn = f.values[static_cast<size_t>(x1)].producer;
  EXPECT_EQ(f.nodes[static_cast<size_t>(bn)].name, "Net/Conv2d_1a_3x3/BatchNorm");
  EXPECT_EQ(f.logits, g.logits);
  EXPECT_EQ(f.losses, g.losses);
}

TEST(FuseBatchNormRelu, LeavesABatchNormWithOtherReadersAlone) {
  GraphBuilder b(true);
  const ValueId x = b.images(Shape{1, 4, 4, 2});
  GraphBuilder::ConvOptions c;
  c.filters = 2;
  const ValueId y = b.batch_norm(b.conv2d(x, c, "C"), {}, "C");
  const ValueId r = b.relu(y, "C/Relu");
  b.add(y, r, false, "Sum");  // y also read by Add: fusing would change it
  const ValueId bn2 = b.batch_norm(b.conv2d(x, c, "D"), {}, "D");
  b.endpoint("D_bn", bn2);  // an endpoint: the caller reads the pre-ReLU value
  b.relu(bn2, "D/Relu");
  PassStats stats;
  const Graph f = fuse_batch_norm_relu(b.finish(), &stats);
  EXPECT_EQ(stats.fused_batch_norm_relu, 0);
  EXPECT_EQ(count_ops(f, "relu"), 2);
}

TEST(RemoveIdentityDropout, OnlyInInferenceGraphs) {
  PassStats stats;
  const Graph train = remove_identity_dropout(testing::small_graph({.training = true}), &stats);
  EXPECT_EQ(count_ops(train, "dropout"), 1);
  EXPECT_EQ(stats.removed_identity_dropout, 0);
  const Graph eval = remove_identity_dropout(testing::small_graph({.training = false}), &stats);
  EXPECT_EQ(count_ops(eval, "dropout"), 0);
  EXPECT_EQ(stats.removed_identity_dropout, 1);
  expect_producers_consistent(eval);
  // The logits conv now reads the reshape that fed the dropout.
  for (const Node& node : eval.nodes)
    if (node.name == "Net/Logits/Conv2d_1c_1x1") {
      const ValueId in = node.inputs[0];
      EXPECT_EQ(eval.values[static_cast<size_t>(in)].name, "Net/Logits/Expand");
    }
}

TEST(Autodiff, GradientsFlowOnlyWhereParametersAndLossesMeet) {
  const Graph g = optimize_graph(testing::small_graph({.dead_branch = true}));
  const AutodiffPlan ad = plan_autodiff(g);
  EXPECT_FALSE(ad.needs_grad[static_cast<size_t>(g.images)]);
  EXPECT_FALSE(ad.needs_grad[static_cast<size_t>(g.labels)]);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    if (node.name == "Net/Dead/Conv2d_0a_1x1") {
      EXPECT_FALSE(ad.runs_backward[i]);
      EXPECT_TRUE(ad.param_grad_writers[static_cast<size_t>(node.params[0])].empty());
    } else if (!is_alias_node(node)) {
      EXPECT_TRUE(ad.runs_backward[i]) << node.name;
    }
  }
  // x1 is read by the max pool, the avg pool and the concat: three writers, concat first.
  const auto x1 = static_cast<size_t>(g.endpoint("Conv2d_1a_3x3"));
  const auto& writers = ad.value_grad_writers[x1];
  ASSERT_EQ(writers.size(), 3u);
  EXPECT_EQ(g.nodes[static_cast<size_t>(writers[0].node)].name, "Net/Mixed");
  EXPECT_EQ(writers[0].slot, 2);
  EXPECT_GT(writers[1].node, writers[2].node);  // backward order
  // The pooled features feed the reshape (an alias) and the aux dense: two writers.
  ValueId pooled = kNone;
  for (const Node& node : g.nodes)
    if (node.name == "Net/Logits/AvgPool") pooled = node.outputs[0];
  ASSERT_NE(pooled, kNone);
  EXPECT_EQ(ad.value_grad_writers[static_cast<size_t>(pooled)].size(), 2u);
}

TEST(Autodiff, ReshapeOutputsShareTheirInputsStorage) {
  const Graph g = optimize_graph(testing::small_graph({}));
  const auto roots = storage_roots(g);
  const auto logits = static_cast<size_t>(g.logits);
  const NodeId squeeze = g.values[logits].producer;
  const ValueId conv_out = g.nodes[static_cast<size_t>(squeeze)].inputs[0];
  EXPECT_EQ(roots[logits], conv_out);
}

}  // namespace
}  // namespace ic
