// Inception v3 against the TF-slim tables and torchvision's Inception3, which
// has the same convolutions (an independent count of multiply-adds).
#include <gtest/gtest.h>

#include "models/model.h"
#include "models/model_test_util.h"

namespace ic {
namespace {

using testing::build_or_die;
using testing::endpoint_dims;
using testing::options_for;
using testing::param_shape;
using Dims = std::vector<int64_t>;

TEST(InceptionV3, EndpointShapesAt299MatchTheSlimTable) {
  const Graph g = build_or_die(options_for("inception_v3"));
  const std::vector<std::pair<std::string, Dims>> expected = {
      {"Conv2d_1a_3x3", {149, 149, 32}},
      {"Conv2d_2a_3x3", {147, 147, 32}},
      {"Conv2d_2b_3x3", {147, 147, 64}},
      {"MaxPool_3a_3x3", {73, 73, 64}},
      {"Conv2d_3b_1x1", {73, 73, 80}},
      {"Conv2d_4a_3x3", {71, 71, 192}},
      {"MaxPool_5a_3x3", {35, 35, 192}},
      {"Mixed_5b", {35, 35, 256}},
      {"Mixed_5c", {35, 35, 288}},
      {"Mixed_5d", {35, 35, 288}},
      {"Mixed_6a", {17, 17, 768}},
      {"Mixed_6b", {17, 17, 768}},
      {"Mixed_6c", {17, 17, 768}},
      {"Mixed_6d", {17, 17, 768}},
      {"Mixed_6e", {17, 17, 768}},
      {"Mixed_7a", {8, 8, 1280}},
      {"Mixed_7b", {8, 8, 2048}},
      {"Mixed_7c", {8, 8, 2048}},
      {"AuxLogits", {1001}},
      {"PreLogits", {1, 1, 2048}},
      {"Logits", {1001}},
  };
  ASSERT_EQ(g.endpoints.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(g.endpoints[i].first, expected[i].first) << "end point " << i;
    EXPECT_EQ(endpoint_dims(g, expected[i].first), expected[i].second) << expected[i].first;
  }
  EXPECT_EQ(g.values.at(g.images).shape, (Shape{2, 299, 299, 3}));
  EXPECT_EQ(g.logits, g.endpoint("Logits"));
}

TEST(InceptionV3, ParameterCountsAreExact) {
  ModelOptions o = options_for("inception_v3");
  const Graph with_aux = build_or_die(o);
  EXPECT_EQ(with_aux.trainable_parameter_count(), 27145970);
  EXPECT_EQ(testing::non_trainable_count(with_aux), 36224);
  o.aux_logits = false;
  const Graph without_aux = build_or_die(o);
  EXPECT_EQ(without_aux.trainable_parameter_count(), 23819401);
  EXPECT_EQ(testing::non_trainable_count(without_aux), 34432);
  // Keras Applications' InceptionV3 (1000 classes, no aux, BN beta only): 23,851,784 in all.
  o.num_classes = 1000;
  const Graph keras = build_or_die(o);
  EXPECT_EQ(keras.trainable_parameter_count() + testing::non_trainable_count(keras), 23851784);
}

TEST(InceptionV3, VariableNamesAndShapesAreSlims) {
  const Graph g = build_or_die(options_for("inception_v3"));
  EXPECT_EQ(param_shape(g, "InceptionV3/Conv2d_1a_3x3/weights"), (Shape{3, 3, 3, 32}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Conv2d_1a_3x3/BatchNorm/beta"), (Shape{32}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Conv2d_1a_3x3/BatchNorm/moving_mean"), (Shape{32}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Conv2d_1a_3x3/BatchNorm/moving_variance"), (Shape{32}));
  EXPECT_EQ(g.find_param("InceptionV3/Conv2d_1a_3x3/BatchNorm/gamma"), kNone);
  EXPECT_EQ(param_shape(g, "InceptionV3/Mixed_5b/Branch_1/Conv2d_0b_5x5/weights"),
            (Shape{5, 5, 48, 64}));
  // The scope quirks, verbatim.
  EXPECT_EQ(param_shape(g, "InceptionV3/Mixed_5c/Branch_1/Conv2d_0b_1x1/weights"),
            (Shape{1, 1, 256, 48}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Mixed_5c/Branch_1/Conv_1_0c_5x5/weights"),
            (Shape{5, 5, 48, 64}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Mixed_6a/Branch_0/Conv2d_1a_1x1/weights"),
            (Shape{3, 3, 288, 384}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Mixed_6a/Branch_1/Conv2d_1a_1x1/weights"),
            (Shape{3, 3, 96, 96}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Mixed_7b/Branch_1/Conv2d_0b_3x1/weights"),
            (Shape{3, 1, 384, 384}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Mixed_7c/Branch_1/Conv2d_0c_3x1/weights"),
            (Shape{3, 1, 384, 384}));
  EXPECT_EQ(g.find_param("InceptionV3/Mixed_7c/Branch_1/Conv2d_0b_3x1/weights"), kNone);
  EXPECT_EQ(param_shape(g, "InceptionV3/Mixed_6e/Branch_2/Conv2d_0e_1x7/weights"),
            (Shape{1, 7, 192, 192}));
  // Heads.
  EXPECT_EQ(param_shape(g, "InceptionV3/Logits/Conv2d_1c_1x1/weights"), (Shape{1, 1, 2048, 1001}));
  EXPECT_EQ(param_shape(g, "InceptionV3/Logits/Conv2d_1c_1x1/biases"), (Shape{1001}));
  EXPECT_EQ(param_shape(g, "InceptionV3/AuxLogits/Conv2d_1b_1x1/weights"), (Shape{1, 1, 768, 128}));
  EXPECT_EQ(param_shape(g, "InceptionV3/AuxLogits/Conv2d_2a_5x5/weights"), (Shape{5, 5, 128, 768}));
  EXPECT_EQ(param_shape(g, "InceptionV3/AuxLogits/Conv2d_2b_1x1/weights"),
            (Shape{1, 1, 768, 1001}));
  EXPECT_EQ(param_shape(g, "InceptionV3/AuxLogits/Conv2d_2b_1x1/biases"), (Shape{1001}));
}

TEST(InceptionV3, InitialisersAreSlims) {
  const Graph g = build_or_die(options_for("inception_v3"));
  auto init = [&](const std::string& name) { return g.params.at(g.find_param(name)).init; };
  EXPECT_EQ(init("InceptionV3/Mixed_6b/Branch_1/Conv2d_0b_1x7/weights").kind,
            ParamInit::Kind::variance_scaling);
  EXPECT_EQ(init("InceptionV3/Logits/Conv2d_1c_1x1/weights").kind,
            ParamInit::Kind::variance_scaling);
  const ParamInit aux_conv = init("InceptionV3/AuxLogits/Conv2d_2a_5x5/weights");
  EXPECT_EQ(aux_conv.kind, ParamInit::Kind::truncated_normal);
  EXPECT_FLOAT_EQ(aux_conv.stddev, 0.01f);
  const ParamInit aux_logits = init("InceptionV3/AuxLogits/Conv2d_2b_1x1/weights");
  EXPECT_EQ(aux_logits.kind, ParamInit::Kind::truncated_normal);
  EXPECT_FLOAT_EQ(aux_logits.stddev, 0.001f);
  EXPECT_EQ(init("InceptionV3/Logits/Conv2d_1c_1x1/biases").kind, ParamInit::Kind::zeros);
  EXPECT_EQ(init("InceptionV3/Conv2d_1a_3x3/BatchNorm/moving_variance").kind,
            ParamInit::Kind::ones);
  // Weight decay covers kernels only.
  EXPECT_TRUE(g.params.at(g.find_param("InceptionV3/Conv2d_1a_3x3/weights")).weight_decay);
  EXPECT_FALSE(g.params.at(g.find_param("InceptionV3/Conv2d_1a_3x3/BatchNorm/beta")).weight_decay);
  EXPECT_FALSE(g.params.at(g.find_param("InceptionV3/Logits/Conv2d_1c_1x1/biases")).weight_decay);
}

TEST(InceptionV3, MultiplyAddsMatchTorchvisionsCount) {
  ModelOptions o = options_for("inception_v3");
  o.batch_size = 1;
  o.aux_logits = false;
  // torchvision Inception3 at 299 (conv + fc hooks): 5,713,216,096 with a 2048x1000 fc; our
  // logits layer has 1001 outputs: + 2048.
  EXPECT_EQ(build_or_die(o).multiply_adds(), 5713216096 + 2048);
  // AuxLogits: 1x1 768->128 on 5x5, 5x5 128->768 on 1x1, 1x1 768->1001.
  o.aux_logits = true;
  EXPECT_EQ(build_or_die(o).multiply_adds(),
            5713218144 + 25 * 768 * 128 + 25 * 128 * 768 + 768 * 1001);
}

TEST(InceptionV3, SmallInputsReduceTheHeadKernelsAsSlim) {
  ModelOptions o = options_for("inception_v3");
  // 139 -> 69 -> 67 -> 33 -> 31 -> 15 (35x35 stage) -> 7 (17x17) -> 3 (8x8)
  o.height = o.width = 139;
  const Graph g = build_or_die(o);
  EXPECT_EQ(endpoint_dims(g, "Mixed_6e"), (Dims{7, 7, 768}));
  EXPECT_EQ(endpoint_dims(g, "Mixed_7c"), (Dims{3, 3, 2048}));
  EXPECT_EQ(endpoint_dims(g, "PreLogits"), (Dims{1, 1, 2048}));
  EXPECT_EQ(endpoint_dims(g, "Logits"), (Dims{1001}));
  EXPECT_EQ(endpoint_dims(g, "AuxLogits"), (Dims{1001}));
  // 7x7 -> AvgPool 5x5 stride 3 VALID -> 1x1, so Conv2d_2a becomes 1x1 (and its name says so).
  EXPECT_EQ(param_shape(g, "InceptionV3/AuxLogits/Conv2d_2a_1x1/weights"), (Shape{1, 1, 128, 768}));
  EXPECT_EQ(g.find_param("InceptionV3/AuxLogits/Conv2d_2a_5x5/weights"), kNone);
}

}  // namespace
}  // namespace ic
