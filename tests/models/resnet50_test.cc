// ResNet-50 v1.5 against torchvision's resnet50 (counts measured with torchvision 0.14).
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

TEST(ResNet50, StageShapesAt224) {
  const Graph g = build_or_die(options_for("resnet50"));
  EXPECT_EQ(endpoint_dims(g, "conv1"), (Dims{112, 112, 64}));
  EXPECT_EQ(endpoint_dims(g, "pool1"), (Dims{56, 56, 64}));
  EXPECT_EQ(endpoint_dims(g, "block1/unit_1"), (Dims{56, 56, 256}));
  EXPECT_EQ(endpoint_dims(g, "block1/unit_3"), (Dims{56, 56, 256}));
  EXPECT_EQ(endpoint_dims(g, "block2/unit_1"), (Dims{28, 28, 512}));
  EXPECT_EQ(endpoint_dims(g, "block2/unit_4"), (Dims{28, 28, 512}));
  EXPECT_EQ(endpoint_dims(g, "block3/unit_6"), (Dims{14, 14, 1024}));
  EXPECT_EQ(endpoint_dims(g, "block4/unit_3"), (Dims{7, 7, 2048}));
  EXPECT_EQ(endpoint_dims(g, "global_pool"), (Dims{2048}));
  EXPECT_EQ(endpoint_dims(g, "logits"), (Dims{1000}));
  EXPECT_EQ(g.endpoint("block3/unit_7"), kNone);
  EXPECT_EQ(g.endpoints.size(), 2u + 16u + 2u);
  EXPECT_EQ(g.logits, g.endpoint("logits"));
}

TEST(ResNet50, ParameterCountIsTorchvisions) {
  const Graph g = build_or_die(options_for("resnet50"));
  EXPECT_EQ(g.trainable_parameter_count(), 25557032);
  EXPECT_EQ(testing::non_trainable_count(g), 2 * 26560);  // running mean + var of 53 BNs
  EXPECT_EQ(g.losses.size(), 1u);                         // no auxiliary head
}

TEST(ResNet50, MultiplyAddsAreTorchvisions) {
  ModelOptions o = options_for("resnet50");
  o.batch_size = 1;
  EXPECT_EQ(build_or_die(o).multiply_adds(), 4089184256);
}

TEST(ResNet50, VariableNamesAreSlimStyle) {
  const Graph g = build_or_die(options_for("resnet50"));
  EXPECT_EQ(param_shape(g, "resnet_v1_50/conv1/weights"), (Shape{7, 7, 3, 64}));
  EXPECT_EQ(param_shape(g, "resnet_v1_50/conv1/BatchNorm/gamma"), (Shape{64}));
  EXPECT_EQ(param_shape(g, "resnet_v1_50/conv1/BatchNorm/beta"), (Shape{64}));
  const std::string unit = "resnet_v1_50/block2/unit_1/bottleneck_v1/";
  EXPECT_EQ(param_shape(g, unit + "shortcut/weights"), (Shape{1, 1, 256, 512}));
  EXPECT_EQ(param_shape(g, unit + "conv1/weights"), (Shape{1, 1, 256, 128}));
  EXPECT_EQ(param_shape(g, unit + "conv2/weights"), (Shape{3, 3, 128, 128}));
  EXPECT_EQ(param_shape(g, unit + "conv3/weights"), (Shape{1, 1, 128, 512}));
  EXPECT_EQ(g.find_param("resnet_v1_50/block2/unit_2/bottleneck_v1/shortcut/weights"), kNone);
  EXPECT_EQ(param_shape(g, "resnet_v1_50/logits/weights"), (Shape{2048, 1000}));
  EXPECT_EQ(param_shape(g, "resnet_v1_50/logits/biases"), (Shape{1000}));
}

TEST(ResNet50, StrideIsOnTheThreeByThreeConv) {
  // v1.5: in block2/unit_1 conv1 (1x1) keeps 56x56 and conv2 (3x3) halves it.
  const Graph g = build_or_die(options_for("resnet50"));
  const std::string unit = "resnet_v1_50/block2/unit_1/bottleneck_v1/";
  for (const Node& node : g.nodes) {
    const Shape& out = g.values.at(node.outputs[0]).shape;
    if (node.name == unit + "conv1") {
      EXPECT_EQ(out, (Shape{2, 56, 56, 128}));
    }
    if (node.name == unit + "conv2") {
      EXPECT_EQ(out, (Shape{2, 28, 28, 128}));
    }
  }
}

TEST(ResNet50, DefaultsAreTorchvisions) {
  const ModelOptions o = options_for("resnet50");
  EXPECT_EQ(o.height, 224);
  EXPECT_EQ(o.num_classes, 1000);
  EXPECT_FLOAT_EQ(o.batch_norm_decay, 0.9f);
  EXPECT_FLOAT_EQ(o.batch_norm_epsilon, 1e-5f);
  EXPECT_FLOAT_EQ(o.label_smoothing, 0.f);
}

}  // namespace
}  // namespace ic
