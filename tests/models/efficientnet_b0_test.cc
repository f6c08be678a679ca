// EfficientNet-B0 against Keras' EfficientNetB0. Reference figures from Keras 3.15
// EfficientNetB0(weights=None): 5,288,548 trainable parameters, 42,023 non-trainable of which
// 7 are the Normalization layer's (mean 3, variance 3, count 1; left out here), so 42,016 BN
// moving statistics. Multiply-adds summed over its Conv2D, DepthwiseConv2D and Dense layers
// from their output shapes: 385,814,752 per image at 224 x 224 (torchvision publishes 0.39
// GFLOPS for efficientnet_b0), 72,420,832 at 96 x 96, 449,859,008 at 225 x 227 (Keras'
// correct_pad + VALID). keras.src.applications.efficientnet.EfficientNet(width_coefficient,
// 1.0, 224, 0.2, weights=None): width 0.5 has 1,712,522 and 120,051,984; width 0.1 221,670
// and 25,955,904.
#include <gtest/gtest.h>

#include <cmath>

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

TEST(EfficientNetB0, EndPointShapesAt224) {
  const Graph g = build_or_die(options_for("efficientnet_b0"));
  EXPECT_EQ(endpoint_dims(g, "stem_activation"), (Dims{112, 112, 32}));
  EXPECT_EQ(endpoint_dims(g, "block1a"), (Dims{112, 112, 16}));
  EXPECT_EQ(endpoint_dims(g, "block2a"), (Dims{56, 56, 24}));
  EXPECT_EQ(endpoint_dims(g, "block2b"), (Dims{56, 56, 24}));
  EXPECT_EQ(endpoint_dims(g, "block3a"), (Dims{28, 28, 40}));
  EXPECT_EQ(endpoint_dims(g, "block3b"), (Dims{28, 28, 40}));
  EXPECT_EQ(endpoint_dims(g, "block4a"), (Dims{14, 14, 80}));
  EXPECT_EQ(endpoint_dims(g, "block4c"), (Dims{14, 14, 80}));
  EXPECT_EQ(endpoint_dims(g, "block5a"), (Dims{14, 14, 112}));
  EXPECT_EQ(endpoint_dims(g, "block5c"), (Dims{14, 14, 112}));
  EXPECT_EQ(endpoint_dims(g, "block6a"), (Dims{7, 7, 192}));
  EXPECT_EQ(endpoint_dims(g, "block6d"), (Dims{7, 7, 192}));
  EXPECT_EQ(endpoint_dims(g, "block7a"), (Dims{7, 7, 320}));
  EXPECT_EQ(endpoint_dims(g, "top_activation"), (Dims{7, 7, 1280}));
  EXPECT_EQ(endpoint_dims(g, "avg_pool"), (Dims{1280}));
  EXPECT_EQ(endpoint_dims(g, "predictions"), (Dims{1000}));
  EXPECT_EQ(g.endpoint("block6e"), kNone);
  EXPECT_EQ(g.endpoints.size(), 1u + 16u + 3u);
  EXPECT_EQ(g.logits, g.endpoint("predictions"));
}

TEST(EfficientNetB0, ParameterCountIsKeras) {
  const Graph g = build_or_die(options_for("efficientnet_b0"));
  EXPECT_EQ(g.trainable_parameter_count(), 5288548);
  EXPECT_EQ(testing::non_trainable_count(g), 42023 - 7);
}

TEST(EfficientNetB0, MultiplyAddsAreKeras) {
  ModelOptions o = options_for("efficientnet_b0");
  o.batch_size = 1;
  EXPECT_EQ(build_or_die(o).multiply_adds(), 385814752);
  o.height = o.width = 96;
  EXPECT_EQ(build_or_die(o).multiply_adds(), 72420832);
  // TensorFlow SAME is Keras' correct_pad + VALID on odd sides too.
  o.height = 225;
  o.width = 227;
  const Graph g = build_or_die(o);
  EXPECT_EQ(g.multiply_adds(), 449859008);
  EXPECT_EQ(endpoint_dims(g, "stem_activation"), (Dims{113, 114, 32}));
  EXPECT_EQ(endpoint_dims(g, "top_activation"), (Dims{8, 8, 1280}));
}

TEST(EfficientNetB0, VariableNamesAreKeras) {
  const Graph g = build_or_die(options_for("efficientnet_b0"));
  const std::string s = "efficientnet_b0/";
  EXPECT_EQ(param_shape(g, s + "stem_conv/kernel"), (Shape{3, 3, 3, 32}));
  EXPECT_EQ(param_shape(g, s + "stem_bn/gamma"), (Shape{32}));
  EXPECT_EQ(param_shape(g, s + "stem_bn/moving_mean"), (Shape{32}));
  EXPECT_EQ(g.find_param(s + "block1a_expand_conv/kernel"), kNone);
  EXPECT_EQ(param_shape(g, s + "block1a_dwconv/depthwise_kernel"), (Shape{3, 3, 32, 1}));
  EXPECT_EQ(param_shape(g, s + "block1a_bn/beta"), (Shape{32}));
  EXPECT_EQ(param_shape(g, s + "block1a_se_reduce/kernel"), (Shape{1, 1, 32, 8}));
  EXPECT_EQ(param_shape(g, s + "block1a_se_reduce/bias"), (Shape{8}));
  EXPECT_EQ(param_shape(g, s + "block1a_se_expand/kernel"), (Shape{1, 1, 8, 32}));
  EXPECT_EQ(param_shape(g, s + "block1a_se_expand/bias"), (Shape{32}));
  EXPECT_EQ(param_shape(g, s + "block1a_project_conv/kernel"), (Shape{1, 1, 32, 16}));
  EXPECT_EQ(param_shape(g, s + "block1a_project_bn/gamma"), (Shape{16}));
  EXPECT_EQ(param_shape(g, s + "block2a_expand_conv/kernel"), (Shape{1, 1, 16, 96}));
  EXPECT_EQ(param_shape(g, s + "block2a_expand_bn/gamma"), (Shape{96}));
  EXPECT_EQ(param_shape(g, s + "block2a_se_reduce/kernel"), (Shape{1, 1, 96, 4}));
  EXPECT_EQ(param_shape(g, s + "block6a_dwconv/depthwise_kernel"), (Shape{5, 5, 672, 1}));
  EXPECT_EQ(param_shape(g, s + "block6d_se_reduce/kernel"), (Shape{1, 1, 1152, 48}));
  EXPECT_EQ(param_shape(g, s + "block7a_project_conv/kernel"), (Shape{1, 1, 1152, 320}));
  EXPECT_EQ(param_shape(g, s + "top_conv/kernel"), (Shape{1, 1, 320, 1280}));
  EXPECT_EQ(param_shape(g, s + "top_bn/moving_variance"), (Shape{1280}));
  EXPECT_EQ(param_shape(g, s + "predictions/kernel"), (Shape{1280, 1000}));
  EXPECT_EQ(param_shape(g, s + "predictions/bias"), (Shape{1000}));
  // VarianceScaling(2, fan_out, truncated_normal): sqrt(2 / fan_out) / 0.8796...
  auto stddev = [&](const std::string& name) {
    const ParamInit& init = g.params.at(g.find_param(s + name)).init;
    EXPECT_EQ(init.kind, ParamInit::Kind::truncated_normal) << name;
    return init.stddev;
  };
  EXPECT_NEAR(stddev("stem_conv/kernel"), std::sqrt(2.0 / (9 * 32)) / 0.87962566, 1e-6);
  EXPECT_NEAR(stddev("block1a_dwconv/depthwise_kernel"), std::sqrt(2.0 / 9) / 0.87962566, 1e-6);
  EXPECT_NEAR(stddev("block6a_dwconv/depthwise_kernel"), std::sqrt(2.0 / 25) / 0.87962566, 1e-6);
  EXPECT_NEAR(stddev("block1a_se_reduce/kernel"), std::sqrt(2.0 / 8) / 0.87962566, 1e-6);
}

TEST(EfficientNetB0, MbConvLayers) {
  const Graph g = build_or_die(options_for("efficientnet_b0"));
  const auto bns = nodes_of<BatchNormDesc>(g);
  EXPECT_EQ(bns.size(), 1u + 2u + 15u * 3u + 1u);
  for (const Node* node : bns) {
    const auto& bn = std::get<BatchNormDesc>(node->desc);
    EXPECT_TRUE(bn.has_gamma);
    EXPECT_FALSE(bn.fused_relu);
    EXPECT_FLOAT_EQ(bn.epsilon, 1e-3f);
    EXPECT_FLOAT_EQ(bn.decay, 0.99f);
  }
  auto count = [&](Activation f) {
    return nodes_of<ActivationDesc>(
               g, [f](const Node&, const ActivationDesc& a) { return a.function == f; })
        .size();
  };
  EXPECT_EQ(count(Activation::swish), 1u + 2u + 15u * 3u + 1u);  // stem, blocks, top
  EXPECT_EQ(count(Activation::sigmoid), 16u);                    // one gate per block
  EXPECT_EQ(count(Activation::relu6), 0u);
  EXPECT_EQ(nodes_of<ChannelScaleDesc>(g).size(), 16u);
  EXPECT_TRUE(nodes_of<ReluDesc>(g).empty());
  const auto depthwise =
      nodes_of<Conv2dDesc>(g, [](const Node&, const Conv2dDesc& c) { return c.depthwise(); });
  EXPECT_EQ(depthwise.size(), 16u);
  for (const Node* node : depthwise) {
    EXPECT_EQ(std::get<Conv2dDesc>(node->desc).padding, Padding::same) << node->name;
  }
  const auto se_convs = nodes_of<Conv2dDesc>(g, [](const Node&, const Conv2dDesc& c) {
    return c.has_bias && c.input.h() == 1 && c.input.w() == 1;
  });
  EXPECT_EQ(se_convs.size(), 32u);
}

// Drop-connect at 0.2 * b / 16 on the residual blocks (b counts every block from 0), then
// the add; the top dropout at rate 0.2.
TEST(EfficientNetB0, DropConnectRatesAndResiduals) {
  const Graph g = build_or_die(options_for("efficientnet_b0"));
  std::vector<std::pair<std::string, float>> drops;
  float top_keep = 0;
  for (const Node* node : nodes_of<DropoutDesc>(g)) {
    const auto& d = std::get<DropoutDesc>(node->desc);
    if (d.per_example) {
      drops.emplace_back(node->name, d.keep_prob);
    } else {
      EXPECT_EQ(node->name, "efficientnet_b0/top_dropout");
      top_keep = d.keep_prob;
    }
  }
  EXPECT_FLOAT_EQ(top_keep, 0.8f);
  const std::vector<std::pair<std::string, int>> want = {
      {"block2b", 2},  {"block3b", 4},  {"block4b", 6},  {"block4c", 7}, {"block5b", 9},
      {"block5c", 10}, {"block6b", 12}, {"block6c", 13}, {"block6d", 14}};
  ASSERT_EQ(drops.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(drops[i].first, "efficientnet_b0/" + want[i].first + "_drop");
    EXPECT_FLOAT_EQ(drops[i].second, static_cast<float>(1.0 - 0.2 * want[i].second / 16));
  }
  EXPECT_EQ(nodes_of<AddDesc>(g).size(), want.size());
}

TEST(EfficientNetB0, DepthMultiplierIsKerasWidthCoefficient) {
  ModelOptions o = options_for("efficientnet_b0");
  o.batch_size = 1;
  o.depth_multiplier = 0.5f;
  Graph g = build_or_die(o);
  EXPECT_EQ(g.trainable_parameter_count(), 1712522);
  EXPECT_EQ(g.multiply_adds(), 120051984);
  EXPECT_EQ(param_shape(g, "efficientnet_b0/block1a_se_reduce/kernel"), (Shape{1, 1, 16, 4}));
  EXPECT_EQ(param_shape(g, "efficientnet_b0/top_conv/kernel"), (Shape{1, 1, 160, 640}));
  o.depth_multiplier = 0.1f;
  g = build_or_die(o);
  EXPECT_EQ(g.trainable_parameter_count(), 221670);
  EXPECT_EQ(g.multiply_adds(), 25955904);
}

TEST(EfficientNetB0, AnySideFrom32) {
  testing::expect_side_range("efficientnet_b0", 32, ImageSideRange{}.max);
}

TEST(EfficientNetB0, SummaryTotals) {
  testing::expect_summary_totals(options_for("efficientnet_b0"), 5288548, 42016, 385814752);
}

TEST(EfficientNetB0, DefaultsAndRecipe) {
  const ModelOptions o = options_for("efficientnet_b0");
  EXPECT_EQ(o.height, 224);
  EXPECT_EQ(o.num_classes, 1000);
  EXPECT_FLOAT_EQ(o.dropout_keep_prob, 0.8f);
  EXPECT_FLOAT_EQ(o.label_smoothing, 0.1f);
  const ModelSpec* spec = find_model_spec("efficientnet_b0").value();
  EXPECT_STREQ(spec->recipe.optimizer, "RMS");
  EXPECT_DOUBLE_EQ(spec->recipe.learning_rate, 0.016);
  EXPECT_EQ(spec->recipe.train_batch_size, 2048);
  EXPECT_EQ(spec->recipe.train_steps, 218949);
  EXPECT_EQ(spec->recipe.lr_schedule, LrScheduleKind::efficientnet);
  EXPECT_EQ(spec->recipe.warmup_epochs, 5);
  EXPECT_DOUBLE_EQ(spec->recipe.weight_decay, 1e-5);
  EXPECT_TRUE(spec->recipe.moving_average);
}

// main.py's L2 loss sums every trainable variable but batch norm's: kernels, depthwise kernels
// and the biases (squeeze-and-excitation's and the predictions'), as the other models' do not.
TEST(EfficientNetB0, WeightDecayCoversEveryVariableButBatchNorms) {
  const Graph g = build_or_die(options_for("efficientnet_b0"));
  int64_t decayed = 0, biases = 0;
  for (const ParamInfo& p : g.params) {
    if (!p.trainable) continue;
    const bool batch_norm = p.name.ends_with("/gamma") || p.name.ends_with("/beta");
    EXPECT_EQ(p.weight_decay, !batch_norm) << p.name;
    if (p.weight_decay) decayed += p.shape.numel();
    if (p.name.ends_with("/bias")) ++biases;
  }
  EXPECT_EQ(biases, 2 * 16 + 1);  // se_reduce and se_expand in each block, predictions
  // Keras' trainable total less the BatchNormalization layers' gamma and beta.
  int64_t batch_norm = 0;
  for (const ParamInfo& p : g.params)
    if (p.trainable && !p.weight_decay) batch_norm += p.shape.numel();
  EXPECT_EQ(decayed + batch_norm, 5288548);
  EXPECT_EQ(batch_norm, 42016);  // as many as the moving statistics: one gamma and beta each
  // TF-slim's models keep their biases out (MobileNet v1's logits).
  const Graph slim = build_or_die(options_for("mobilenet_v1"));
  for (const ParamInfo& p : slim.params) {
    if (p.name.ends_with("/biases")) {
      EXPECT_FALSE(p.weight_decay) << p.name;
    }
  }
}

}  // namespace
}  // namespace ic
