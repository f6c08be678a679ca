// build_model(): options, validation, losses and tiny models.
#include "models/model.h"

#include <gtest/gtest.h>

#include <variant>

#include "models/model_test_util.h"

namespace ic {
namespace {

using testing::build_or_die;
using testing::options_for;

TEST(Models, NamesAndDefaults) {
  EXPECT_EQ(model_names(),
            (std::vector<std::string>{"inception_v3", "inception_v4", "resnet50", "mobilenet_v1",
                                      "mobilenet_v2", "densenet121", "squeezenet1_0",
                                      "squeezenet1_1", "efficientnet_b0"}));
  const ModelOptions v3 = options_for("inception_v3");
  EXPECT_EQ(v3.height, 299);
  EXPECT_EQ(v3.num_classes, 1001);
  EXPECT_FLOAT_EQ(v3.batch_norm_decay, 0.996f);
  EXPECT_FLOAT_EQ(v3.label_smoothing, 0.1f);
  EXPECT_FALSE(default_model_options("inception_v5").ok());
}

TEST(Models, RejectsBadOptionsSayingWhat) {
  ModelOptions o = options_for("inception_v3");
  o.name = "vgg16";
  Result<Graph> g = build_model(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("vgg16"), std::string::npos);
  EXPECT_NE(g.status().message().find("inception_v4"), std::string::npos);  // lists the known

  o = options_for("inception_v3");
  o.depth_multiplier = 0.f;
  g = build_model(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("depth_multiplier"), std::string::npos);

  o = options_for("inception_v3");
  o.num_classes = 0;
  EXPECT_FALSE(build_model(o).ok());
  o = options_for("inception_v3");
  o.batch_size = 0;
  EXPECT_FALSE(build_model(o).ok());
  o = options_for("inception_v3");
  o.dropout_keep_prob = 0.f;
  EXPECT_FALSE(build_model(o).ok());
}

TEST(Models, ImageSizeLimitsAreStated) {
  ModelOptions o = options_for("inception_v3");
  o.aux_logits = false;
  Result<ImageSideRange> range = supported_image_sides(o);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->min, 75);  // Keras documents 75 as InceptionV3's minimum too
  o.height = 74;
  Result<Graph> g = build_model(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("75"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("height 74"), std::string::npos) << g.status().message();
  o.height = 75;
  o.width = 75;
  EXPECT_TRUE(build_model(o).ok());
  // The fixed 8x8 logits pool (stride 2) squeezes to 1x1 only for final grids up to 9x9.
  o.width = range->max + 1;
  EXPECT_FALSE(build_model(o).ok());
  o.width = range->max;
  EXPECT_TRUE(build_model(o).ok());

  o = options_for("inception_v4");
  range = supported_image_sides(o);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->min, 75);
  EXPECT_EQ(range->max, ImageSideRange{}.max);  // its heads pool the whole map
  o.height = o.width = 331;
  EXPECT_TRUE(build_model(o).ok());

  o = options_for("resnet50");
  o.height = 31;
  EXPECT_FALSE(build_model(o).ok());
}

TEST(Models, TrainingAndEvalGraphsCarryTheLossTerms) {
  for (const bool training : {true, false}) {
    ModelOptions o = options_for("inception_v3");
    o.training = training;
    const Graph g = build_or_die(o);
    EXPECT_EQ(g.training, training);
    ASSERT_NE(g.labels, kNone);
    EXPECT_EQ(g.values.at(g.labels).shape, (Shape{2}));
    EXPECT_EQ(g.values.at(g.labels).dtype, DType::i32);
    ASSERT_EQ(g.losses.size(), 2u);
    const Node& main = g.nodes.at(g.values.at(g.losses[0]).producer);
    const Node& aux = g.nodes.at(g.values.at(g.losses[1]).producer);
    const auto& main_desc = std::get<SoftmaxCrossEntropyDesc>(main.desc);
    const auto& aux_desc = std::get<SoftmaxCrossEntropyDesc>(aux.desc);
    EXPECT_FLOAT_EQ(main_desc.weight, 1.f);
    EXPECT_FLOAT_EQ(main_desc.label_smoothing, 0.1f);
    EXPECT_EQ(main_desc.num_classes, 1001);
    EXPECT_EQ(main.inputs.at(0), g.logits);
    EXPECT_FLOAT_EQ(aux_desc.weight, 0.4f);
    EXPECT_FLOAT_EQ(aux_desc.label_smoothing, 0.1f);
    EXPECT_EQ(aux.inputs.at(0), g.endpoint("AuxLogits"));
    // BN and dropout follow the mode.
    for (const Node& node : g.nodes) {
      if (const auto* bn = std::get_if<BatchNormDesc>(&node.desc)) {
        EXPECT_EQ(bn->training, training);
      }
      if (const auto* d = std::get_if<DropoutDesc>(&node.desc)) {
        EXPECT_EQ(d->training, training);
        EXPECT_FLOAT_EQ(d->keep_prob, 0.8f);
      }
    }
  }
}

TEST(Models, WithoutLossesThereAreNoLabels) {
  ModelOptions o = options_for("inception_v4");
  o.build_losses = false;
  o.training = false;
  const Graph g = build_or_die(o);
  EXPECT_EQ(g.labels, kNone);
  EXPECT_TRUE(g.losses.empty());
  EXPECT_NE(g.logits, kNone);
}

TEST(Models, OptionsReachTheLayers) {
  ModelOptions o = options_for("resnet50");
  o.compute = DType::bf16;
  o.batch_norm_decay = 0.97f;
  const Graph g = build_or_die(o);
  int convs = 0, bns = 0;
  for (const Node& node : g.nodes) {
    if (const auto* c = std::get_if<Conv2dDesc>(&node.desc)) {
      EXPECT_EQ(c->compute, DType::bf16) << node.name;
      ++convs;
    }
    if (const auto* bn = std::get_if<BatchNormDesc>(&node.desc)) {
      EXPECT_FLOAT_EQ(bn->decay, 0.97f);
      EXPECT_FLOAT_EQ(bn->epsilon, 1e-5f);
      EXPECT_TRUE(bn->has_gamma);
      ++bns;
    }
  }
  EXPECT_EQ(convs, 53);
  EXPECT_EQ(bns, 53);
}

// Tiny networks for fast tests elsewhere: every width at least the model's min_depth (16; 8 for
// the MobileNets and EfficientNet, as their references), but the class-wide logit layers and
// EfficientNet's squeeze-and-excitation reductions (a quarter of the block's input width).
TEST(Models, TinyModelsBuildWithChannelsAtLeastMinDepth) {
  for (const std::string& name : model_names()) {
    ModelOptions o = options_for(name);
    o.depth_multiplier = 0.1f;
    o.num_classes = 10;
    Result<ImageSideRange> range = supported_image_sides(o);
    ASSERT_TRUE(range.ok());
    o.height = o.width = range->min;
    const Graph g = build_or_die(o);
    ASSERT_NE(g.logits, kNone) << name;
    EXPECT_EQ(g.values.at(g.logits).shape, (Shape{2, 10})) << name;
    for (const Node& node : g.nodes)
      if (const auto* c = std::get_if<Conv2dDesc>(&node.desc)) {
        if (node.name.find("Logits") != std::string::npos ||
            node.name.find("classifier") != std::string::npos ||
            node.name.find("se_reduce") != std::string::npos)
          continue;
        EXPECT_GE(c->out_channels, o.min_depth) << node.name;
      }
    EXPECT_LT(g.trainable_parameter_count(), 2'000'000) << name;
  }
}

TEST(Models, DepthMultiplierTruncatesAsSlim) {
  ModelOptions o = options_for("inception_v3");
  o.aux_logits = false;
  o.depth_multiplier = 0.5f;
  const Graph g = build_or_die(o);
  // depth(d) = max(int(d * 0.5), 16): 32 -> 16, 80 -> 40, 2048 -> concat of halves = 1024.
  EXPECT_EQ(testing::param_shape(g, "InceptionV3/Conv2d_1a_3x3/weights"), (Shape{3, 3, 3, 16}));
  EXPECT_EQ(testing::param_shape(g, "InceptionV3/Conv2d_3b_1x1/weights"), (Shape{1, 1, 32, 40}));
  EXPECT_EQ(testing::endpoint_dims(g, "Mixed_7c"), (std::vector<int64_t>{8, 8, 1024}));
  // int(80 * 0.7) = 56 in TF-slim (Python doubles); with the float 0.7f (0.699999988)
  // a plain product truncates to 55.
  o.depth_multiplier = 0.7f;
  const Graph g7 = build_or_die(o);
  EXPECT_EQ(testing::param_shape(g7, "InceptionV3/Conv2d_3b_1x1/weights")[3], 56);
  EXPECT_EQ(testing::param_shape(g7, "InceptionV3/Mixed_7b/Branch_0/Conv2d_0a_1x1/weights")[3],
            224);
}

}  // namespace
}  // namespace ic
