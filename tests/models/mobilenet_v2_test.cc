// MobileNet v2 against TF-slim's mobilenet_v2 (V2_DEF) and Keras' MobileNetV2 (the same layers
// at multipliers where both round alike). Reference figures, Keras 3.15 MobileNetV2(weights=
// None): 3,504,872 trainable parameters at 1000 classes (alpha 0.5: 1,968,680; 1.4:
// 6,108,776), 34,112 BN moving statistics, 300,774,272 multiply-adds per image (conv, depthwise
// and dense layers at 224; alpha 0.5: 97,131,840). slim's logits are a 1x1 conv with biases,
// so 1001 classes add 1280 + 1 parameters and 1280 multiply-adds.
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

TEST(MobileNetV2, EndPointShapesAt224) {
  const Graph g = build_or_die(options_for("mobilenet_v2"));
  EXPECT_EQ(endpoint_dims(g, "layer_1"), (Dims{112, 112, 32}));
  EXPECT_EQ(endpoint_dims(g, "layer_2"), (Dims{112, 112, 16}));
  EXPECT_EQ(endpoint_dims(g, "layer_3"), (Dims{56, 56, 24}));
  EXPECT_EQ(endpoint_dims(g, "layer_4"), (Dims{56, 56, 24}));
  EXPECT_EQ(endpoint_dims(g, "layer_5"), (Dims{28, 28, 32}));
  EXPECT_EQ(endpoint_dims(g, "layer_7"), (Dims{28, 28, 32}));
  EXPECT_EQ(endpoint_dims(g, "layer_8"), (Dims{14, 14, 64}));
  EXPECT_EQ(endpoint_dims(g, "layer_11"), (Dims{14, 14, 64}));
  EXPECT_EQ(endpoint_dims(g, "layer_12"), (Dims{14, 14, 96}));
  EXPECT_EQ(endpoint_dims(g, "layer_14"), (Dims{14, 14, 96}));
  EXPECT_EQ(endpoint_dims(g, "layer_15"), (Dims{7, 7, 160}));
  EXPECT_EQ(endpoint_dims(g, "layer_17"), (Dims{7, 7, 160}));
  EXPECT_EQ(endpoint_dims(g, "layer_18"), (Dims{7, 7, 320}));
  EXPECT_EQ(endpoint_dims(g, "layer_19"), (Dims{7, 7, 1280}));
  EXPECT_EQ(endpoint_dims(g, "global_pool"), (Dims{1, 1, 1280}));
  EXPECT_EQ(endpoint_dims(g, "Logits"), (Dims{1001}));
  EXPECT_EQ(g.endpoint("layer_20"), kNone);
  EXPECT_EQ(g.endpoints.size(), 19u + 2u);
  EXPECT_EQ(g.logits, g.endpoint("Logits"));
}

TEST(MobileNetV2, ParameterCountIsSlims) {
  const Graph g = build_or_die(options_for("mobilenet_v2"));
  EXPECT_EQ(g.trainable_parameter_count(), 3504872 + 1281);
  EXPECT_EQ(testing::non_trainable_count(g), 34112);
}

TEST(MobileNetV2, MultiplyAdds) {
  ModelOptions o = options_for("mobilenet_v2");
  o.batch_size = 1;
  EXPECT_EQ(build_or_die(o).multiply_adds(), 300774272 + 1280);
}

TEST(MobileNetV2, VariableNamesAreSlims) {
  const Graph g = build_or_die(options_for("mobilenet_v2"));
  const std::string s = "MobilenetV2/";
  EXPECT_EQ(param_shape(g, s + "Conv/weights"), (Shape{3, 3, 3, 32}));
  EXPECT_EQ(param_shape(g, s + "Conv/BatchNorm/gamma"), (Shape{32}));
  EXPECT_EQ(param_shape(g, s + "expanded_conv/depthwise/depthwise_weights"), (Shape{3, 3, 32, 1}));
  EXPECT_EQ(param_shape(g, s + "expanded_conv/depthwise/BatchNorm/beta"), (Shape{32}));
  EXPECT_EQ(param_shape(g, s + "expanded_conv/project/weights"), (Shape{1, 1, 32, 16}));
  EXPECT_EQ(g.find_param(s + "expanded_conv/expand/weights"), kNone);
  EXPECT_EQ(param_shape(g, s + "expanded_conv_1/expand/weights"), (Shape{1, 1, 16, 96}));
  EXPECT_EQ(param_shape(g, s + "expanded_conv_1/expand/BatchNorm/gamma"), (Shape{96}));
  EXPECT_EQ(param_shape(g, s + "expanded_conv_1/depthwise/depthwise_weights"),
            (Shape{3, 3, 96, 1}));
  EXPECT_EQ(param_shape(g, s + "expanded_conv_1/project/weights"), (Shape{1, 1, 96, 24}));
  EXPECT_EQ(param_shape(g, s + "expanded_conv_16/expand/weights"), (Shape{1, 1, 160, 960}));
  EXPECT_EQ(param_shape(g, s + "expanded_conv_16/project/weights"), (Shape{1, 1, 960, 320}));
  EXPECT_EQ(g.find_param(s + "expanded_conv_17/project/weights"), kNone);
  EXPECT_EQ(param_shape(g, s + "Conv_1/weights"), (Shape{1, 1, 320, 1280}));
  EXPECT_EQ(param_shape(g, s + "Conv_1/BatchNorm/moving_variance"), (Shape{1280}));
  EXPECT_EQ(param_shape(g, s + "Logits/Conv2d_1c_1x1/weights"), (Shape{1, 1, 1280, 1001}));
  EXPECT_EQ(param_shape(g, s + "Logits/Conv2d_1c_1x1/biases"), (Shape{1001}));
}

TEST(MobileNetV2, ResidualsWhereStrideOneAndWidthsMatch) {
  const Graph g = build_or_die(options_for("mobilenet_v2"));
  std::vector<std::string> adds;
  for (const Node* node : nodes_of<AddDesc>(g)) {
    EXPECT_FALSE(std::get<AddDesc>(node->desc).fused_relu) << node->name;
    adds.push_back(node->name);
  }
  const std::vector<std::string> want = {
      "MobilenetV2/expanded_conv_2/add",  "MobilenetV2/expanded_conv_4/add",
      "MobilenetV2/expanded_conv_5/add",  "MobilenetV2/expanded_conv_7/add",
      "MobilenetV2/expanded_conv_8/add",  "MobilenetV2/expanded_conv_9/add",
      "MobilenetV2/expanded_conv_11/add", "MobilenetV2/expanded_conv_12/add",
      "MobilenetV2/expanded_conv_14/add", "MobilenetV2/expanded_conv_15/add"};
  EXPECT_EQ(adds, want);
}

TEST(MobileNetV2, Relu6ExceptAfterTheProjections) {
  const Graph g = build_or_die(options_for("mobilenet_v2"));
  const auto bns = nodes_of<BatchNormDesc>(g);
  EXPECT_EQ(bns.size(), 1u + 2u + 16u * 3u + 1u);
  for (const Node* node : bns) {
    const auto& bn = std::get<BatchNormDesc>(node->desc);
    EXPECT_TRUE(bn.has_gamma);
    EXPECT_FALSE(bn.fused_relu);
    EXPECT_FLOAT_EQ(bn.decay, 0.997f);
    EXPECT_FLOAT_EQ(bn.epsilon, 0.001f);
  }
  const auto activations = nodes_of<ActivationDesc>(g);
  EXPECT_EQ(activations.size(), 1u + 1u + 16u * 2u + 1u);  // all BNs but the 17 projections
  for (const Node* node : activations) {
    EXPECT_EQ(std::get<ActivationDesc>(node->desc).function, Activation::relu6);
    EXPECT_EQ(node->name.find("project"), std::string::npos) << node->name;
  }
  const auto dropouts = nodes_of<DropoutDesc>(g);
  ASSERT_EQ(dropouts.size(), 1u);
  EXPECT_FLOAT_EQ(std::get<DropoutDesc>(dropouts[0]->desc).keep_prob, 0.8f);
}

TEST(MobileNetV2, DepthMultiplierIsMakeDivisible) {
  ModelOptions o = options_for("mobilenet_v2");
  o.batch_size = 1;
  // 1.4: _make_divisible(d * 1.4, 8) everywhere, Conv_1 1792: Keras' alpha 1.4 + 1792 + 1.
  o.depth_multiplier = 1.4f;
  Graph g = build_or_die(o);
  EXPECT_EQ(g.trainable_parameter_count(), 6108776 + 1793);
  EXPECT_EQ(param_shape(g, "MobilenetV2/Conv/weights"), (Shape{3, 3, 3, 48}));
  // expanded_conv_6 (32 -> 64): input 44.8 -> 48, expansion 6 x 48, output 89.6 -> 88.
  EXPECT_EQ(param_shape(g, "MobilenetV2/expanded_conv_6/project/weights"), (Shape{1, 1, 288, 88}));
  EXPECT_EQ(param_shape(g, "MobilenetV2/Conv_1/weights"), (Shape{1, 1, 448, 1792}));
  // 0.5: slim's default finegrain_classification_mode=False shrinks Conv_1 to 640 (Keras keeps
  // 1280): Keras' alpha 0.5 less Conv_1's 160 x 640 weights and 2 x 640 BN parameters less the
  // dense 640 x 1000 + 0 biases, plus the 1001st class's 640 + 1.
  o.depth_multiplier = 0.5f;
  g = build_or_die(o);
  EXPECT_EQ(param_shape(g, "MobilenetV2/Conv_1/weights"), (Shape{1, 1, 160, 640}));
  EXPECT_EQ(g.trainable_parameter_count(), 1968680 - 160 * 640 - 2 * 640 - 640 * 1000 + 641);
  EXPECT_EQ(g.multiply_adds(), 97131840 - 49 * 160 * 640 - 640 * 1000 + 640);
  // 0.1: min_depth 8 and multiples of 8: 32 -> 8, 16 -> 8, 320 -> 32, 1280 -> 128.
  o.depth_multiplier = 0.1f;
  g = build_or_die(o);
  EXPECT_EQ(param_shape(g, "MobilenetV2/Conv/weights"), (Shape{3, 3, 3, 8}));
  EXPECT_EQ(param_shape(g, "MobilenetV2/expanded_conv/project/weights"), (Shape{1, 1, 8, 8}));
  EXPECT_EQ(param_shape(g, "MobilenetV2/expanded_conv_1/expand/weights"), (Shape{1, 1, 8, 48}));
  EXPECT_EQ(endpoint_dims(g, "layer_18"), (Dims{7, 7, 32}));
  EXPECT_EQ(endpoint_dims(g, "layer_19"), (Dims{7, 7, 128}));
}

TEST(MobileNetV2, AnySideFrom32) {
  testing::expect_side_range("mobilenet_v2", 32, ImageSideRange{}.max);
  ModelOptions o = options_for("mobilenet_v2");
  o.height = 225;
  o.width = 300;
  const Graph g = build_or_die(o);
  EXPECT_EQ(endpoint_dims(g, "layer_1"), (Dims{113, 150, 32}));
  EXPECT_EQ(endpoint_dims(g, "layer_19"), (Dims{8, 10, 1280}));
  EXPECT_EQ(endpoint_dims(g, "global_pool"), (Dims{1, 1, 1280}));
}

TEST(MobileNetV2, SummaryTotals) {
  testing::expect_summary_totals(options_for("mobilenet_v2"), 3506153, 34112, 300775552);
}

TEST(MobileNetV2, DefaultsAndRecipe) {
  const ModelOptions o = options_for("mobilenet_v2");
  EXPECT_EQ(o.height, 224);
  EXPECT_EQ(o.num_classes, 1001);
  EXPECT_EQ(o.min_depth, 8);
  const ModelSpec* spec = find_model_spec("mobilenet_v2").value();
  EXPECT_STREQ(spec->recipe.optimizer, "RMS");
  EXPECT_EQ(spec->recipe.lr_schedule, LrScheduleKind::mobilenet);
  EXPECT_EQ(spec->recipe.train_steps, 8000000);
}

}  // namespace
}  // namespace ic
