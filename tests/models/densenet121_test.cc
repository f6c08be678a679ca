// DenseNet-121 against Keras' DenseNet121. Reference figures from Keras 3.15
// DenseNet121(weights=None): 7,978,856 trainable parameters and 83,648 BN moving statistics;
// multiply-adds summed over its Conv2D and Dense layers from their output shapes:
// 2,834,161,664 per image at 224 x 224 (torchvision publishes 2.83 GFLOPS for its densenet121,
// the same layers), 1,446,502,400 at 160 x 160 and 2,878,535,040 at 225 x 227.
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

TEST(DenseNet121, EndPointShapesAt224) {
  const Graph g = build_or_die(options_for("densenet121"));
  EXPECT_EQ(endpoint_dims(g, "conv1/relu"), (Dims{112, 112, 64}));
  EXPECT_EQ(endpoint_dims(g, "pool1"), (Dims{56, 56, 64}));
  EXPECT_EQ(endpoint_dims(g, "conv2_block6_concat"), (Dims{56, 56, 256}));
  EXPECT_EQ(endpoint_dims(g, "pool2_pool"), (Dims{28, 28, 128}));
  EXPECT_EQ(endpoint_dims(g, "conv3_block12_concat"), (Dims{28, 28, 512}));
  EXPECT_EQ(endpoint_dims(g, "pool3_pool"), (Dims{14, 14, 256}));
  EXPECT_EQ(endpoint_dims(g, "conv4_block24_concat"), (Dims{14, 14, 1024}));
  EXPECT_EQ(endpoint_dims(g, "pool4_pool"), (Dims{7, 7, 512}));
  EXPECT_EQ(endpoint_dims(g, "conv5_block16_concat"), (Dims{7, 7, 1024}));
  EXPECT_EQ(endpoint_dims(g, "relu"), (Dims{7, 7, 1024}));
  EXPECT_EQ(endpoint_dims(g, "avg_pool"), (Dims{1024}));
  EXPECT_EQ(endpoint_dims(g, "predictions"), (Dims{1000}));
  EXPECT_EQ(g.endpoints.size(), 12u);
  EXPECT_EQ(g.logits, g.endpoint("predictions"));
}

TEST(DenseNet121, ParameterCountIsKeras) {
  const Graph g = build_or_die(options_for("densenet121"));
  EXPECT_EQ(g.trainable_parameter_count(), 7978856);
  EXPECT_EQ(testing::non_trainable_count(g), 83648);
}

TEST(DenseNet121, MultiplyAddsAreKeras) {
  ModelOptions o = options_for("densenet121");
  o.batch_size = 1;
  EXPECT_EQ(build_or_die(o).multiply_adds(), 2834161664);
  o.height = o.width = 160;
  EXPECT_EQ(build_or_die(o).multiply_adds(), 1446502400);
  // Odd sides: ZeroPadding2D + VALID conv and pool as Keras, 225 -> 113 -> 57, 227 -> 114 -> 57.
  o.height = 225;
  o.width = 227;
  const Graph g = build_or_die(o);
  EXPECT_EQ(g.multiply_adds(), 2878535040);
  EXPECT_EQ(endpoint_dims(g, "conv1/relu"), (Dims{113, 114, 64}));
  EXPECT_EQ(endpoint_dims(g, "pool1"), (Dims{57, 57, 64}));
  EXPECT_EQ(endpoint_dims(g, "pool4_pool"), (Dims{7, 7, 512}));
}

TEST(DenseNet121, VariableNamesAreKeras) {
  const Graph g = build_or_die(options_for("densenet121"));
  const std::string s = "densenet121/";
  EXPECT_EQ(param_shape(g, s + "conv1/conv/kernel"), (Shape{7, 7, 3, 64}));
  EXPECT_EQ(g.find_param(s + "conv1/conv/bias"), kNone);
  EXPECT_EQ(param_shape(g, s + "conv1/bn/gamma"), (Shape{64}));
  EXPECT_EQ(param_shape(g, s + "conv1/bn/beta"), (Shape{64}));
  EXPECT_EQ(param_shape(g, s + "conv1/bn/moving_mean"), (Shape{64}));
  EXPECT_EQ(param_shape(g, s + "conv1/bn/moving_variance"), (Shape{64}));
  EXPECT_EQ(param_shape(g, s + "conv2_block1_0_bn/gamma"), (Shape{64}));
  EXPECT_EQ(param_shape(g, s + "conv2_block1_1_conv/kernel"), (Shape{1, 1, 64, 128}));
  EXPECT_EQ(param_shape(g, s + "conv2_block1_1_bn/beta"), (Shape{128}));
  EXPECT_EQ(param_shape(g, s + "conv2_block1_2_conv/kernel"), (Shape{3, 3, 128, 32}));
  EXPECT_EQ(param_shape(g, s + "conv2_block2_0_bn/gamma"), (Shape{96}));
  EXPECT_EQ(param_shape(g, s + "pool2_bn/gamma"), (Shape{256}));
  EXPECT_EQ(param_shape(g, s + "pool2_conv/kernel"), (Shape{1, 1, 256, 128}));
  EXPECT_EQ(param_shape(g, s + "conv4_block24_2_conv/kernel"), (Shape{3, 3, 128, 32}));
  EXPECT_EQ(g.find_param(s + "conv4_block25_2_conv/kernel"), kNone);
  EXPECT_EQ(param_shape(g, s + "pool4_conv/kernel"), (Shape{1, 1, 1024, 512}));
  EXPECT_EQ(param_shape(g, s + "conv5_block16_2_conv/kernel"), (Shape{3, 3, 128, 32}));
  EXPECT_EQ(g.find_param(s + "pool5_conv/kernel"), kNone);
  EXPECT_EQ(param_shape(g, s + "bn/gamma"), (Shape{1024}));
  EXPECT_EQ(param_shape(g, s + "predictions/kernel"), (Shape{1024, 1000}));
  EXPECT_EQ(param_shape(g, s + "predictions/bias"), (Shape{1000}));
  for (const ParamInfo& p : g.params) {
    EXPECT_EQ(p.name.find("BatchNorm"), std::string::npos) << p.name;
    if (p.name.ends_with("/kernel")) {
      EXPECT_EQ(p.init.kind, ParamInit::Kind::glorot_uniform) << p.name;  // Keras' default
    }
  }
}

TEST(DenseNet121, KerasLayers) {
  const Graph g = build_or_die(options_for("densenet121"));
  // BN-ReLU before every conv but the stem's, and after the stem and at the end.
  const auto bns = nodes_of<BatchNormDesc>(g);
  EXPECT_EQ(bns.size(), 1u + 2u * 58u + 3u + 1u);
  for (const Node* node : bns) {
    const auto& bn = std::get<BatchNormDesc>(node->desc);
    EXPECT_TRUE(bn.has_gamma);
    EXPECT_TRUE(bn.fused_relu);
    EXPECT_FLOAT_EQ(bn.epsilon, 1.001e-5f);
    EXPECT_FLOAT_EQ(bn.decay, 0.99f);
  }
  EXPECT_EQ(nodes_of<Conv2dDesc>(g).size(), 1u + 2u * 58u + 3u);
  EXPECT_EQ(nodes_of<ConcatDesc>(g).size(), 58u);
  // ZeroPadding2D(3) before the stem conv, (1) before pool1; VALID windows after them.
  const auto pads = nodes_of<PadDesc>(g);
  ASSERT_EQ(pads.size(), 2u);
  EXPECT_EQ(std::get<PadDesc>(pads[0]->desc).pads.top, 3);
  EXPECT_EQ(std::get<PadDesc>(pads[0]->desc).pads.right, 3);
  EXPECT_EQ(std::get<PadDesc>(pads[1]->desc).pads.bottom, 1);
  const auto pools = nodes_of<Pool2dDesc>(g);
  ASSERT_EQ(pools.size(), 4u);
  EXPECT_EQ(std::get<Pool2dDesc>(pools[0]->desc).kind, PoolKind::max);
  for (size_t i = 1; i < pools.size(); ++i) {
    const auto& p = std::get<Pool2dDesc>(pools[i]->desc);
    EXPECT_EQ(p.kind, PoolKind::avg);
    EXPECT_EQ(p.kernel_h, 2);
    EXPECT_EQ(p.stride_h, 2);
    EXPECT_EQ(p.padding, Padding::valid);
  }
  EXPECT_TRUE(nodes_of<DropoutDesc>(g).empty());
}

TEST(DenseNet121, DepthMultiplierScalesGrowthAndStem) {
  ModelOptions o = options_for("densenet121");
  o.depth_multiplier = 0.5f;  // growth 16, stem 32, bottlenecks 64, transitions halve
  const Graph g = build_or_die(o);
  EXPECT_EQ(param_shape(g, "densenet121/conv1/conv/kernel"), (Shape{7, 7, 3, 32}));
  EXPECT_EQ(param_shape(g, "densenet121/conv2_block1_1_conv/kernel"), (Shape{1, 1, 32, 64}));
  EXPECT_EQ(param_shape(g, "densenet121/conv2_block1_2_conv/kernel"), (Shape{3, 3, 64, 16}));
  EXPECT_EQ(endpoint_dims(g, "conv2_block6_concat"), (Dims{56, 56, 32 + 6 * 16}));
  EXPECT_EQ(endpoint_dims(g, "pool2_pool"), (Dims{28, 28, 64}));
  EXPECT_EQ(endpoint_dims(g, "conv5_block16_concat"), (Dims{7, 7, 256 + 16 * 16}));
}

TEST(DenseNet121, SidesFrom29) {
  // 29 -> conv1 15 -> pool1 8 -> 4 -> 2 -> 1; 28 -> 14 -> 7 -> 3 -> 1 -> 0.
  testing::expect_side_range("densenet121", 29, ImageSideRange{}.max);
}

TEST(DenseNet121, SummaryTotals) {
  testing::expect_summary_totals(options_for("densenet121"), 7978856, 83648, 2834161664);
}

TEST(DenseNet121, DefaultsAndRecipe) {
  const ModelOptions o = options_for("densenet121");
  EXPECT_EQ(o.height, 224);
  EXPECT_EQ(o.num_classes, 1000);
  EXPECT_FLOAT_EQ(o.label_smoothing, 0.f);
  const ModelSpec* spec = find_model_spec("densenet121").value();
  EXPECT_STREQ(spec->recipe.optimizer, "momentum");
  EXPECT_FALSE(spec->recipe.nesterov);
  EXPECT_DOUBLE_EQ(spec->recipe.learning_rate, 0.1);
  EXPECT_EQ(spec->recipe.train_batch_size, 1024);
  EXPECT_EQ(spec->recipe.train_steps, 130000);
  EXPECT_EQ(spec->recipe.lr_schedule, LrScheduleKind::densenet);
  EXPECT_DOUBLE_EQ(spec->recipe.weight_decay, 1e-4);
  EXPECT_FALSE(spec->recipe.moving_average);
}

}  // namespace
}  // namespace ic
