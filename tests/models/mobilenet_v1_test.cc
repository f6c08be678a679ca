// MobileNet v1 against TF-slim's mobilenet_v1 and Keras' MobileNet (the same layers). Reference
// figures: Keras 3.15 MobileNet(weights=None) has 4,231,976 trainable parameters at 1000
// classes (alpha 0.5: 1,331,592; 0.25: 470,072) and 21,888 BN moving statistics; slim's
// logits are a 1x1 conv with biases, so at 1001 classes add last width + 1. Multiply-adds:
// slim's docstring table, 567,716,352 for the body at 224, plus 1024 x 1001 for the logits
// (Keras' layers give 568,740,352 at 1000 classes; 0.5: 149,497,088).
#include <gtest/gtest.h>

#include "models/model.h"
#include "models/model_spec.h"
#include "models/model_test_util.h"
#include "models/zoo_test_util.h"

namespace ic {
namespace {

using testing::build_or_die;
using testing::endpoint_dims;
using testing::nodes_of;
using testing::options_for;
using testing::param_shape;
using Dims = std::vector<int64_t>;

TEST(MobileNetV1, EndPointShapesAt224) {
  const Graph g = build_or_die(options_for("mobilenet_v1"));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_0"), (Dims{112, 112, 32}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_1_depthwise"), (Dims{112, 112, 32}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_1_pointwise"), (Dims{112, 112, 64}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_2_depthwise"), (Dims{56, 56, 64}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_2_pointwise"), (Dims{56, 56, 128}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_3_pointwise"), (Dims{56, 56, 128}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_4_pointwise"), (Dims{28, 28, 256}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_5_pointwise"), (Dims{28, 28, 256}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_6_pointwise"), (Dims{14, 14, 512}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_11_pointwise"), (Dims{14, 14, 512}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_12_depthwise"), (Dims{7, 7, 512}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_12_pointwise"), (Dims{7, 7, 1024}));
  EXPECT_EQ(endpoint_dims(g, "Conv2d_13_pointwise"), (Dims{7, 7, 1024}));
  EXPECT_EQ(endpoint_dims(g, "AvgPool_1a"), (Dims{1, 1, 1024}));
  EXPECT_EQ(endpoint_dims(g, "Logits"), (Dims{1001}));
  EXPECT_EQ(g.endpoints.size(), 1u + 2u * 13u + 2u);
  EXPECT_EQ(g.endpoints.front().first, "Conv2d_0");
  EXPECT_EQ(g.endpoints.back().first, "Logits");
  EXPECT_EQ(g.logits, g.endpoint("Logits"));
  EXPECT_EQ(g.losses.size(), 1u);
}

TEST(MobileNetV1, ParameterCountIsSlims) {
  const Graph g = build_or_die(options_for("mobilenet_v1"));
  EXPECT_EQ(g.trainable_parameter_count(), 4231976 + 1025);  // Keras at 1000 + 1024 + 1
  EXPECT_EQ(testing::non_trainable_count(g), 21888);
}

TEST(MobileNetV1, MultiplyAddsAreSlims) {
  ModelOptions o = options_for("mobilenet_v1");
  o.batch_size = 1;
  EXPECT_EQ(build_or_die(o).multiply_adds(), 567716352 + 1024 * 1001);
}

TEST(MobileNetV1, VariableNamesAreSlims) {
  const Graph g = build_or_die(options_for("mobilenet_v1"));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_0/weights"), (Shape{3, 3, 3, 32}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_0/BatchNorm/gamma"), (Shape{32}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_0/BatchNorm/beta"), (Shape{32}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_0/BatchNorm/moving_mean"), (Shape{32}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_1_depthwise/depthwise_weights"),
            (Shape{3, 3, 32, 1}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_1_depthwise/BatchNorm/gamma"), (Shape{32}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_1_pointwise/weights"), (Shape{1, 1, 32, 64}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_13_depthwise/depthwise_weights"),
            (Shape{3, 3, 1024, 1}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_13_pointwise/weights"), (Shape{1, 1, 1024, 1024}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Logits/Conv2d_1c_1x1/weights"), (Shape{1, 1, 1024, 1001}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Logits/Conv2d_1c_1x1/biases"), (Shape{1001}));
  EXPECT_EQ(g.find_param("MobilenetV1/Conv2d_1_depthwise/weights"), kNone);
  EXPECT_EQ(g.find_param("MobilenetV1/Conv2d_1_pointwise/biases"), kNone);
  // slim's arg_scope: truncated normal 0.09 for every kernel, the logits' too.
  for (const char* name :
       {"MobilenetV1/Conv2d_0/weights", "MobilenetV1/Conv2d_7_depthwise/depthwise_weights",
        "MobilenetV1/Logits/Conv2d_1c_1x1/weights"}) {
    const ParamInit& init = g.params.at(g.find_param(name)).init;
    EXPECT_EQ(init.kind, ParamInit::Kind::truncated_normal) << name;
    EXPECT_FLOAT_EQ(init.stddev, 0.09f) << name;
  }
}

TEST(MobileNetV1, Relu6AfterEveryBatchNormAndSlimsBatchNorm) {
  const Graph g = build_or_die(options_for("mobilenet_v1"));
  const auto bns = nodes_of<BatchNormDesc>(g);
  ASSERT_EQ(bns.size(), 27u);
  for (const Node* node : bns) {
    const auto& bn = std::get<BatchNormDesc>(node->desc);
    EXPECT_TRUE(bn.has_gamma) << node->name;
    EXPECT_FALSE(bn.fused_relu) << node->name;
    EXPECT_FLOAT_EQ(bn.decay, 0.9997f);
    EXPECT_FLOAT_EQ(bn.epsilon, 0.001f);
  }
  const auto relu6 = nodes_of<ActivationDesc>(
      g, [](const Node&, const ActivationDesc& a) { return a.function == Activation::relu6; });
  EXPECT_EQ(relu6.size(), 27u);
  EXPECT_EQ(nodes_of<ActivationDesc>(g).size(), 27u);
  EXPECT_TRUE(nodes_of<ReluDesc>(g).empty());
  const auto depthwise = nodes_of<Conv2dDesc>(g, [](const Node&, const Conv2dDesc& c) {
    return c.depthwise() && c.kernel_h == 3 && c.padding == Padding::same;
  });
  EXPECT_EQ(depthwise.size(), 13u);
  const auto dropouts = nodes_of<DropoutDesc>(g);
  ASSERT_EQ(dropouts.size(), 1u);
  EXPECT_FLOAT_EQ(std::get<DropoutDesc>(dropouts[0]->desc).keep_prob, 0.999f);
  EXPECT_EQ(dropouts[0]->name, "MobilenetV1/Logits/Dropout_1b");
}

TEST(MobileNetV1, DepthMultiplierIsSlimsDepth) {
  ModelOptions o = options_for("mobilenet_v1");
  o.batch_size = 1;
  o.depth_multiplier = 0.5f;
  Graph g = build_or_die(o);
  EXPECT_EQ(g.trainable_parameter_count(), 1331592 + 513);  // Keras alpha 0.5 + 512 + 1
  EXPECT_EQ(g.multiply_adds(), 149497088 + 512);
  o.depth_multiplier = 0.25f;
  EXPECT_EQ(build_or_die(o).trainable_parameter_count(), 470072 + 257);
  // min_depth 8: max(int(d * 0.1), 8): 32 -> 8, 64 -> 8, 128 -> 12, 1024 -> 102.
  o.depth_multiplier = 0.1f;
  g = build_or_die(o);
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_0/weights"), (Shape{3, 3, 3, 8}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_1_pointwise/weights"), (Shape{1, 1, 8, 8}));
  EXPECT_EQ(param_shape(g, "MobilenetV1/Conv2d_2_pointwise/weights"), (Shape{1, 1, 8, 12}));
  EXPECT_EQ(testing::endpoint_dims(g, "Conv2d_13_pointwise"), (Dims{7, 7, 102}));
}

TEST(MobileNetV1, SidesFrom32To256) {
  // AvgPool_1a is a 7x7 window with stride 2 (shrunk on small maps): 1x1 from final maps up to
  // 8x8, i.e. sides up to 256.
  testing::expect_side_range("mobilenet_v1", 32, 256);
  ModelOptions o = options_for("mobilenet_v1");
  o.height = 256;
  o.width = 128;
  const Graph g = build_or_die(o);
  EXPECT_EQ(endpoint_dims(g, "Conv2d_13_pointwise"), (Dims{8, 4, 1024}));
  EXPECT_EQ(endpoint_dims(g, "AvgPool_1a"), (Dims{1, 1, 1024}));
  const auto pools = nodes_of<Pool2dDesc>(g);
  ASSERT_EQ(pools.size(), 1u);
  const auto& pool = std::get<Pool2dDesc>(pools[0]->desc);
  EXPECT_EQ(pool.kernel_h, 7);
  EXPECT_EQ(pool.kernel_w, 4);
  EXPECT_EQ(pool.stride_h, 2);
}

TEST(MobileNetV1, SummaryTotals) {
  testing::expect_summary_totals(options_for("mobilenet_v1"), 4233001, 21888, 568741376);
}

TEST(MobileNetV1, DefaultsAndRecipe) {
  const ModelOptions o = options_for("mobilenet_v1");
  EXPECT_EQ(o.height, 224);
  EXPECT_EQ(o.width, 224);
  EXPECT_EQ(o.num_classes, 1001);
  EXPECT_EQ(o.min_depth, 8);
  EXPECT_FLOAT_EQ(o.dropout_keep_prob, 0.999f);
  EXPECT_FLOAT_EQ(o.label_smoothing, 0.1f);
  const ModelSpec* spec = find_model_spec("mobilenet_v1").value();
  EXPECT_STREQ(spec->recipe.optimizer, "RMS");
  EXPECT_DOUBLE_EQ(spec->recipe.learning_rate, 0.165);
  EXPECT_EQ(spec->recipe.train_batch_size, 1024);
  EXPECT_EQ(spec->recipe.train_steps, 8000000);
  EXPECT_EQ(spec->recipe.lr_schedule, LrScheduleKind::mobilenet);
  EXPECT_DOUBLE_EQ(spec->recipe.weight_decay, 4e-5);
  EXPECT_TRUE(spec->recipe.moving_average);
}

}  // namespace
}  // namespace ic
