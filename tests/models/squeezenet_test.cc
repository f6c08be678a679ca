// SqueezeNet 1.0 and 1.1 against torchvision's squeezenet1_0 / squeezenet1_1: 1,248,424 and
// 1,235,496 parameters (torchvision's model card). Multiply-adds per image, summed over the
// convolutions from torchvision's layer shapes (tests/models' hand count, as Python would):
// 818,924,576 and 349,151,936 at 224 x 224 (torchvision publishes 0.82 and 0.35 GFLOPS),
// 832,667,936 and 387,747,520 at 227 x 227.
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

TEST(SqueezeNet, EndPointShapesAt224) {
  Graph g = build_or_die(options_for("squeezenet1_0"));
  EXPECT_EQ(endpoint_dims(g, "features.1"), (Dims{109, 109, 96}));
  EXPECT_EQ(endpoint_dims(g, "features.2"), (Dims{54, 54, 96}));
  EXPECT_EQ(endpoint_dims(g, "features.3"), (Dims{54, 54, 128}));
  EXPECT_EQ(endpoint_dims(g, "features.5"), (Dims{54, 54, 256}));
  EXPECT_EQ(endpoint_dims(g, "features.6"), (Dims{27, 27, 256}));
  EXPECT_EQ(endpoint_dims(g, "features.8"), (Dims{27, 27, 384}));
  EXPECT_EQ(endpoint_dims(g, "features.10"), (Dims{27, 27, 512}));
  EXPECT_EQ(endpoint_dims(g, "features.11"), (Dims{13, 13, 512}));
  EXPECT_EQ(endpoint_dims(g, "features.12"), (Dims{13, 13, 512}));
  EXPECT_EQ(endpoint_dims(g, "classifier.2"), (Dims{13, 13, 1000}));
  EXPECT_EQ(endpoint_dims(g, "classifier.3"), (Dims{1000}));
  EXPECT_EQ(g.endpoints.size(), 14u);
  EXPECT_EQ(g.logits, g.endpoint("classifier.3"));

  g = build_or_die(options_for("squeezenet1_1"));
  EXPECT_EQ(endpoint_dims(g, "features.1"), (Dims{111, 111, 64}));
  EXPECT_EQ(endpoint_dims(g, "features.2"), (Dims{55, 55, 64}));
  EXPECT_EQ(endpoint_dims(g, "features.4"), (Dims{55, 55, 128}));
  EXPECT_EQ(endpoint_dims(g, "features.5"), (Dims{27, 27, 128}));
  EXPECT_EQ(endpoint_dims(g, "features.7"), (Dims{27, 27, 256}));
  EXPECT_EQ(endpoint_dims(g, "features.8"), (Dims{13, 13, 256}));
  EXPECT_EQ(endpoint_dims(g, "features.12"), (Dims{13, 13, 512}));
  EXPECT_EQ(endpoint_dims(g, "classifier.3"), (Dims{1000}));
  EXPECT_EQ(g.endpoints.size(), 14u);
}

TEST(SqueezeNet, ParameterCountsAreTorchvisions) {
  Graph g = build_or_die(options_for("squeezenet1_0"));
  EXPECT_EQ(g.trainable_parameter_count(), 1248424);
  EXPECT_EQ(testing::non_trainable_count(g), 0);
  g = build_or_die(options_for("squeezenet1_1"));
  EXPECT_EQ(g.trainable_parameter_count(), 1235496);
  EXPECT_EQ(testing::non_trainable_count(g), 0);
}

TEST(SqueezeNet, MultiplyAdds) {
  for (const auto& [name, at224, at227] : {std::tuple{"squeezenet1_0", 818924576, 832667936},
                                           std::tuple{"squeezenet1_1", 349151936, 387747520}}) {
    ModelOptions o = options_for(name);
    o.batch_size = 1;
    EXPECT_EQ(build_or_die(o).multiply_adds(), at224) << name;
    o.height = o.width = 227;
    EXPECT_EQ(build_or_die(o).multiply_adds(), at227) << name;
  }
}

TEST(SqueezeNet, ParameterNamesMapToTorchvisionsStateDict) {
  Graph g = build_or_die(options_for("squeezenet1_0"));
  std::string s = "squeezenet1_0/";
  EXPECT_EQ(param_shape(g, s + "features.0/weights"), (Shape{7, 7, 3, 96}));
  EXPECT_EQ(param_shape(g, s + "features.0/biases"), (Shape{96}));
  EXPECT_EQ(param_shape(g, s + "features.3/squeeze/weights"), (Shape{1, 1, 96, 16}));
  EXPECT_EQ(param_shape(g, s + "features.3/squeeze/biases"), (Shape{16}));
  EXPECT_EQ(param_shape(g, s + "features.3/expand1x1/weights"), (Shape{1, 1, 16, 64}));
  EXPECT_EQ(param_shape(g, s + "features.3/expand3x3/weights"), (Shape{3, 3, 16, 64}));
  EXPECT_EQ(param_shape(g, s + "features.12/expand3x3/biases"), (Shape{256}));
  EXPECT_EQ(g.find_param(s + "features.6/squeeze/weights"), kNone);  // a pool
  EXPECT_EQ(param_shape(g, s + "classifier.1/weights"), (Shape{1, 1, 512, 1000}));
  EXPECT_EQ(param_shape(g, s + "classifier.1/biases"), (Shape{1000}));
  // 26 convolutions, 2 variables each: torchvision's 52 state_dict entries.
  EXPECT_EQ(g.params.size(), 52u);
  const ParamInit& head = g.params.at(g.find_param(s + "classifier.1/weights")).init;
  EXPECT_EQ(head.kind, ParamInit::Kind::truncated_normal);
  EXPECT_FLOAT_EQ(head.stddev, 0.01f);

  g = build_or_die(options_for("squeezenet1_1"));
  s = "squeezenet1_1/";
  EXPECT_EQ(param_shape(g, s + "features.0/weights"), (Shape{3, 3, 3, 64}));
  EXPECT_EQ(g.find_param(s + "features.5/squeeze/weights"), kNone);
  EXPECT_EQ(param_shape(g, s + "features.6/squeeze/weights"), (Shape{1, 1, 128, 32}));
  EXPECT_EQ(param_shape(g, s + "features.12/expand1x1/weights"), (Shape{1, 1, 64, 256}));
  EXPECT_EQ(g.params.size(), 52u);
}

TEST(SqueezeNet, ReluAfterEveryConvNoBatchNorm) {
  const Graph g = build_or_die(options_for("squeezenet1_0"));
  EXPECT_TRUE(nodes_of<BatchNormDesc>(g).empty());
  EXPECT_EQ(nodes_of<Conv2dDesc>(g).size(), 26u);
  EXPECT_EQ(nodes_of<ReluDesc>(g).size(), 26u);
  for (const Node* node : nodes_of<Conv2dDesc>(g)) {
    EXPECT_TRUE(std::get<Conv2dDesc>(node->desc).has_bias) << node->name;
  }
  const auto dropouts = nodes_of<DropoutDesc>(g);
  ASSERT_EQ(dropouts.size(), 1u);
  EXPECT_FLOAT_EQ(std::get<DropoutDesc>(dropouts[0]->desc).keep_prob, 0.5f);
}

// ceil_mode pools: VALID on odd sides, SAME on even ones, a zero pad where the sides differ.
TEST(SqueezeNet, CeilModePoolsPickTheirPaddingFromTheSide) {
  ModelOptions o = options_for("squeezenet1_0");
  Graph g = build_or_die(o);  // pools on 109 (odd), 54 (even), 27 (odd)
  auto pools = nodes_of<Pool2dDesc>(g);
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(std::get<Pool2dDesc>(pools[0]->desc).padding, Padding::valid);
  EXPECT_EQ(std::get<Pool2dDesc>(pools[1]->desc).padding, Padding::same);
  EXPECT_EQ(std::get<Pool2dDesc>(pools[2]->desc).padding, Padding::valid);
  EXPECT_TRUE(nodes_of<PadDesc>(g).empty());

  o.width = 226;  // stem 109 x 110: the first pool pads the width by one after
  g = build_or_die(o);
  const auto pads = nodes_of<PadDesc>(g);
  ASSERT_EQ(pads.size(), 2u);  // 109 x 110, then 54 x 55
  const Pads p = std::get<PadDesc>(pads[0]->desc).pads;
  EXPECT_EQ(p.top + p.bottom + p.left, 0);
  EXPECT_EQ(p.right, 1);
  const Pads q = std::get<PadDesc>(pads[1]->desc).pads;
  EXPECT_EQ(q.top + q.left + q.right, 0);
  EXPECT_EQ(q.bottom, 1);
  EXPECT_EQ(endpoint_dims(g, "features.2"), (Dims{54, 55, 96}));  // ceil(107 / 2) + 1 = 55
  EXPECT_EQ(endpoint_dims(g, "features.6"), (Dims{27, 27, 256}));
  EXPECT_EQ(endpoint_dims(g, "features.11"), (Dims{13, 13, 512}));
}

TEST(SqueezeNet, Sides) {
  // The stem, then three ceil_mode pools whose first window must fit.
  testing::expect_side_range("squeezenet1_0", 29, ImageSideRange{}.max);
  testing::expect_side_range("squeezenet1_1", 25, ImageSideRange{}.max);
}

TEST(SqueezeNet, DepthMultiplierScalesTheFires) {
  ModelOptions o = options_for("squeezenet1_1");
  o.depth_multiplier = 0.5f;  // depth(): max(int(d * 0.5), 16)
  const Graph g = build_or_die(o);
  EXPECT_EQ(param_shape(g, "squeezenet1_1/features.0/weights"), (Shape{3, 3, 3, 32}));
  EXPECT_EQ(param_shape(g, "squeezenet1_1/features.3/squeeze/weights"), (Shape{1, 1, 32, 16}));
  EXPECT_EQ(param_shape(g, "squeezenet1_1/features.3/expand3x3/weights"), (Shape{3, 3, 16, 32}));
  EXPECT_EQ(param_shape(g, "squeezenet1_1/classifier.1/weights"), (Shape{1, 1, 256, 1000}));
}

TEST(SqueezeNet, SummaryTotals) {
  testing::expect_summary_totals(options_for("squeezenet1_0"), 1248424, 0, 818924576);
  testing::expect_summary_totals(options_for("squeezenet1_1"), 1235496, 0, 349151936);
}

TEST(SqueezeNet, DefaultsAndRecipe) {
  for (const char* name : {"squeezenet1_0", "squeezenet1_1"}) {
    const ModelOptions o = options_for(name);
    EXPECT_EQ(o.height, 224);
    EXPECT_EQ(o.num_classes, 1000);
    EXPECT_FLOAT_EQ(o.label_smoothing, 0.f);
    const ModelSpec* spec = find_model_spec(name).value();
    EXPECT_STREQ(spec->recipe.optimizer, "momentum");
    EXPECT_TRUE(spec->recipe.nesterov);
    EXPECT_DOUBLE_EQ(spec->recipe.learning_rate * 1024 / 256, 0.03);
    EXPECT_EQ(spec->recipe.train_steps, 150 * 1300000 / 1024);
    EXPECT_EQ(spec->recipe.lr_schedule, LrScheduleKind::squeezenet);
    EXPECT_DOUBLE_EQ(spec->recipe.weight_decay, 0);
    EXPECT_FALSE(spec->recipe.moving_average);
  }
}

}  // namespace
}  // namespace ic
