// Inception v4 against the tables of inception_v4_model.py.
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

TEST(InceptionV4, EndpointShapesAt299MatchTheTable) {
  const Graph g = build_or_die(options_for("inception_v4"));
  std::vector<std::pair<std::string, Dims>> expected = {
      {"Conv2d_1a_3x3", {149, 149, 32}}, {"Conv2d_2a_3x3", {147, 147, 32}},
      {"Conv2d_2b_3x3", {147, 147, 64}}, {"Mixed_3a", {73, 73, 160}},
      {"Mixed_4a", {71, 71, 192}},       {"Mixed_5a", {35, 35, 384}},
  };
  for (const char* b : {"Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_5e"})
    expected.push_back({b, {35, 35, 384}});
  expected.push_back({"Mixed_6a", {17, 17, 1024}});
  for (const char* b :
       {"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e", "Mixed_6f", "Mixed_6g", "Mixed_6h"})
    expected.push_back({b, {17, 17, 1024}});
  expected.push_back({"Mixed_7a", {8, 8, 1536}});
  for (const char* b : {"Mixed_7b", "Mixed_7c", "Mixed_7d"}) expected.push_back({b, {8, 8, 1536}});
  expected.push_back({"AuxLogits", {1001}});
  expected.push_back({"global_pool", {1, 1, 1536}});
  expected.push_back({"PreLogitsFlatten", {1536}});
  expected.push_back({"Logits", {1001}});

  ASSERT_EQ(g.endpoints.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(g.endpoints[i].first, expected[i].first) << "end point " << i;
    EXPECT_EQ(endpoint_dims(g, expected[i].first), expected[i].second) << expected[i].first;
  }
  EXPECT_EQ(g.logits, g.endpoint("Logits"));
}

TEST(InceptionV4, ParameterCountsAreExact) {
  ModelOptions o = options_for("inception_v4");
  const Graph with_aux = build_or_die(o);
  EXPECT_EQ(with_aux.trainable_parameter_count(), 46009106);
  EXPECT_EQ(testing::non_trainable_count(with_aux), 64960);
  o.aux_logits = false;
  const Graph without_aux = build_or_die(o);
  EXPECT_EQ(without_aux.trainable_parameter_count(), 42649769);
  EXPECT_EQ(testing::non_trainable_count(without_aux), 63168);
}

TEST(InceptionV4, VariableNamesShapesAndInitialisers) {
  const Graph g = build_or_die(options_for("inception_v4"));
  EXPECT_EQ(param_shape(g, "InceptionV4/Conv2d_1a_3x3/weights"), (Shape{3, 3, 3, 32}));
  EXPECT_EQ(param_shape(g, "InceptionV4/Mixed_3a/Branch_1/Conv2d_0a_3x3/weights"),
            (Shape{3, 3, 64, 96}));
  EXPECT_EQ(param_shape(g, "InceptionV4/Mixed_6a/Branch_1/Conv2d_0b_3x3/weights"),
            (Shape{3, 3, 192, 224}));
  EXPECT_EQ(param_shape(g, "InceptionV4/Mixed_6h/Branch_2/Conv2d_0e_1x7/weights"),
            (Shape{1, 7, 224, 256}));
  EXPECT_EQ(param_shape(g, "InceptionV4/Mixed_7d/Branch_2/Conv2d_0e_3x1/weights"),
            (Shape{3, 1, 512, 256}));
  EXPECT_EQ(param_shape(g, "InceptionV4/Mixed_7d/Branch_2/Conv2d_0e_3x1/BatchNorm/beta"),
            (Shape{256}));
  EXPECT_EQ(param_shape(g, "InceptionV4/AuxLogits/Conv2d_2a/weights"), (Shape{5, 5, 128, 768}));
  EXPECT_EQ(param_shape(g, "InceptionV4/AuxLogits/Aux_logits/weights"), (Shape{768, 1001}));
  EXPECT_EQ(param_shape(g, "InceptionV4/AuxLogits/Aux_logits/biases"), (Shape{1001}));
  EXPECT_EQ(param_shape(g, "InceptionV4/Logits/Logits/weights"), (Shape{1536, 1001}));
  EXPECT_EQ(param_shape(g, "InceptionV4/Logits/Logits/biases"), (Shape{1001}));
  // slim.fully_connected keeps its own default initialiser (Xavier); convs take the scope's.
  EXPECT_EQ(g.params.at(g.find_param("InceptionV4/Logits/Logits/weights")).init.kind,
            ParamInit::Kind::glorot_uniform);
  EXPECT_EQ(g.params.at(g.find_param("InceptionV4/AuxLogits/Conv2d_2a/weights")).init.kind,
            ParamInit::Kind::variance_scaling);
}

TEST(InceptionV4, MultiplyAddsNearTheComputedFigure) {
  ModelOptions o = options_for("inception_v4");
  o.batch_size = 1;
  o.aux_logits = false;
  const double macs = static_cast<double>(build_or_die(o).multiply_adds());
  EXPECT_NEAR(macs / 1e9, 12.25, 0.01);  // computed from inception_v4_model.py's layers
}

TEST(InceptionV4, DefaultBatchNormDecayIsTheApplications) {
  EXPECT_FLOAT_EQ(options_for("inception_v4").batch_norm_decay, 0.995f);
}

}  // namespace
}  // namespace ic
