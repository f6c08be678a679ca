// The inference passes on the small test graph: which nodes go, the folded values against
// the formula, the folded graph's logits and losses against the unfolded graph's, and the
// errors of prepare_inference_graph.
#include "graph/inference_passes.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/inference_graph.h"
#include "inference_test_util.h"
#include "test_graphs.h"

namespace ic {
namespace {

using testing::count_ops;

testing::SmallGraphOptions inference_options() {
  testing::SmallGraphOptions o;
  o.training = false;
  o.batch = 3;
  o.size = 7;
  o.dead_branch = true;
  return o;
}

TEST(InferencePasses, FoldsEveryBatchNormAndFusesTheReluAfterIt) {
  const Graph g = testing::small_graph(inference_options());
  ASSERT_EQ(count_ops(g, "batch_norm"), 1);
  ASSERT_EQ(count_ops(g, "batch_norm+relu"), 2);
  ASSERT_EQ(count_ops(g, "relu"), 1);
  const ParamValues values = testing::random_param_values(g, 1);
  auto inference = prepare_inference_graph(g, testing::source_of(g, values));
  ASSERT_TRUE(inference.ok()) << inference.status().message();
  const Graph& f = inference->graph;
  EXPECT_EQ(inference->stats.removed_identity_dropout, 1);
  EXPECT_EQ(inference->stats.removed_dead_nodes, 1);  // the conv nothing reads
  EXPECT_EQ(inference->stats.folded_batch_norm, 3);
  EXPECT_EQ(inference->stats.fused_conv_relu, 3);  // two from batch norms, one Relu node
  EXPECT_EQ(count_ops(f, "batch_norm") + count_ops(f, "batch_norm+relu"), 0);
  // The branch's 3x3 average pool now follows its 1x1 convolution, whose ReLU follows the pool.
  EXPECT_EQ(inference->stats.pools_after_conv, 1);
  EXPECT_EQ(count_ops(f, "dropout"), 0);
  EXPECT_EQ(count_ops(f, "relu"), 1);
  EXPECT_EQ(count_ops(f, "conv2d+relu"), 2);
  EXPECT_EQ(count_ops(f, "conv2d"), 2);  // the logits conv, with its own bias, and the moved one
  EXPECT_EQ(f.nodes.size(), g.nodes.size() - 3 - 1 - 1 - 1 + 1);
  // Parameters: three folded convs (weights + bias), the logits conv, the aux dense.
  EXPECT_EQ(f.params.size(), 3u * 2 + 2 + 2);
  EXPECT_NE(f.find_param("Net/Conv2d_1a_3x3/folded_weights"), kNone);
  EXPECT_NE(f.find_param("Net/Mixed/Branch_1/Conv2d_0b_1x1/folded_bias"), kNone);
  EXPECT_EQ(f.find_param("Net/Conv2d_1a_3x3/weights"), kNone);
  EXPECT_EQ(f.find_param("Net/Dead/Conv2d_0a_1x1/weights"), kNone);
  EXPECT_EQ(f.find_param("Net/Conv2d_1a_3x3/BatchNorm/moving_mean"), kNone);
  ASSERT_EQ(inference->values.size(), f.params.size());
  for (const Node& node : f.nodes) {
    if (const auto* conv = std::get_if<Conv2dDesc>(&node.desc)) {
      EXPECT_FALSE(conv->training) << node.name;
      EXPECT_TRUE(conv->constant_weights) << node.name;
      EXPECT_TRUE(conv->has_bias) << node.name;
    }
  }
  // The endpoints the logits need stay; the values they name are still produced.
  EXPECT_NE(f.endpoint("Conv2d_1a_3x3"), kNone);
  EXPECT_NE(f.values[static_cast<size_t>(f.endpoint("Mixed"))].producer, kNone);
}

TEST(InferencePasses, FoldedValuesFollowTheFormula) {
  const Graph g = testing::small_graph(inference_options());
  const ParamValues values = testing::random_param_values(g, 2);
  auto folded = fold_batch_norm(g, values);
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  auto value = [&](const Graph& graph, const ParamValues& v, const std::string& name) {
    const ParamId p = graph.find_param(name);
    EXPECT_NE(p, kNone) << name;
    return p == kNone ? std::vector<float>{} : v[static_cast<size_t>(p)];
  };
  const std::string conv = "Net/Mixed/Branch_0/Conv2d_0a_1x1";
  const auto w = value(g, values, conv + "/weights");
  const auto beta = value(g, values, conv + "/BatchNorm/beta");
  const auto mean = value(g, values, conv + "/BatchNorm/moving_mean");
  const auto var = value(g, values, conv + "/BatchNorm/moving_variance");
  const auto fw = value(folded->graph, folded->values, conv + "/folded_weights");
  const auto fb = value(folded->graph, folded->values, conv + "/folded_bias");
  const size_t channels = beta.size();
  ASSERT_EQ(fw.size(), w.size());
  ASSERT_EQ(fb.size(), channels);
  const double eps = 1e-3;  // the builder's default
  for (size_t c = 0; c < channels; ++c) {
    const double s = 1.0 / std::sqrt(double{var[c]} + eps);
    EXPECT_NEAR(fb[c], beta[c] - mean[c] * s, 1e-6) << c;
    for (size_t k = c; k < w.size(); k += channels) EXPECT_NEAR(fw[k], w[k] * s, 1e-6) << k;
  }
}

TEST(InferencePasses, FoldedGraphComputesTheUnfoldedLogitsAndLosses) {
  const Graph g = testing::small_graph(inference_options());
  const ParamValues values = testing::random_param_values(g, 3);
  auto backend = testing::test_cpu_backend();
  ASSERT_NE(backend, nullptr);
  const std::vector<float> images = testing::random_images(g, 4);
  const std::vector<int32_t> labels{1, 4, -1};
  const std::vector<float> unfolded = testing::run_graph(*backend, g, values, images, labels);
  for (bool timed : {false, true}) {
    InferenceGraphOptions options;
    options.time_algorithms = timed;
    auto inference = prepare_inference_graph(g, testing::source_of(g, values), options);
    ASSERT_TRUE(inference.ok()) << inference.status().message();
    const std::vector<float> folded =
        testing::run_graph(*backend, inference->graph, inference->values, images, labels);
    testing::expect_relative(folded, unfolded, 1e-5, "folded vs unfolded");
  }
}

TEST(InferencePasses, KeepsWhatCannotBeFolded) {
  // A batch norm whose conv output is also an endpoint cannot be folded: the caller reads
  // the value before normalisation.
  GraphBuilder b(false);
  const ValueId images = b.images(Shape{1, 5, 5, 3});
  GraphBuilder::ConvOptions c;
  c.filters = 4;
  const ValueId y = b.conv2d(images, c, "N/Conv");
  b.endpoint("raw", y);
  const ValueId z = b.batch_norm(y, {}, "N/Conv");
  const ValueId pooled = b.global_avg_pool(z, "N/Pool");
  b.set_logits(pooled);
  const Graph g = b.finish();
  const ParamValues values = testing::random_param_values(g, 5);
  auto folded = fold_batch_norm(g, values);
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ(folded->stats.folded_batch_norm, 0);
  EXPECT_EQ(count_ops(folded->graph, "batch_norm"), 1);
}

TEST(InferencePasses, Errors) {
  const Graph g = testing::small_graph(inference_options());
  ParamValues values = testing::random_param_values(g, 6);
  // A missing parameter is named.
  const std::string missing = "Net/Mixed/Branch_0/Conv2d_0a_1x1/BatchNorm/moving_variance";
  ParamSource without = [&](const std::string& name) {
    return name == missing ? ParamBytes{} : testing::source_of(g, values)(name);
  };
  auto result = prepare_inference_graph(g, without);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find(missing), std::string::npos);
  // A value of the wrong size is named too.
  values[static_cast<size_t>(g.find_param(missing))].pop_back();
  result = prepare_inference_graph(g, testing::source_of(g, values));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find(missing), std::string::npos);
  // A variance of -epsilon would divide by zero.
  values[static_cast<size_t>(g.find_param(missing))].push_back(-1e-3f);
  result = prepare_inference_graph(g, testing::source_of(g, values));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("not positive"), std::string::npos)
      << result.status().message();
  // Training graphs are refused.
  testing::SmallGraphOptions training = inference_options();
  training.training = true;
  const Graph t = testing::small_graph(training);
  const ParamValues tv = testing::random_param_values(t, 7);
  EXPECT_FALSE(prepare_inference_graph(t, testing::source_of(t, tv)).ok());
  EXPECT_FALSE(fold_batch_norm(t, tv).ok());
}

}  // namespace
}  // namespace ic
