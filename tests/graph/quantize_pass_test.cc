// quantize_layers on the small test graph: which nodes become int8, one Quantize node per value
// read (shared), the weight scales of the folded weights, and the errors.
#include "graph/quantize_pass.h"

#include <gtest/gtest.h>

#include <string>

#include "graph/graph.h"
#include "graph/inference_graph.h"
#include "inference_test_util.h"
#include "test_graphs.h"

namespace ic {
namespace {

using testing::count_ops;

InferenceGraph folded_small_graph() {
  testing::SmallGraphOptions o;
  o.training = false;
  o.batch = 2;
  o.size = 7;
  const Graph g = testing::small_graph(o);
  const ParamValues values = testing::random_param_values(g, 3);
  return prepare_inference_graph(g, testing::source_of(g, values)).value();
}

// The small graph's two branch convolutions (0.05) and its logits convolution (0.02).
QuantizationTable branches_and_logits() {
  QuantizationTable table;
  table.layers["Net/Mixed/Branch_0/Conv2d_0a_1x1"] = {0.05f, {}};
  table.layers["Net/Mixed/Branch_1/Conv2d_0b_1x1"] = {0.05f, {}};
  table.layers["Net/Logits/Conv2d_1c_1x1"] = {0.02f, {}};
  return table;
}

TEST(QuantizePass, WeightScalesAreTheLargestMagnitudePerOutputChannel) {
  // HWIO with 2 output channels (innermost): channel 0 {1, -4, 0.5}, channel 1 {0, 0, 0}.
  const std::vector<float> w = {1.f, 0.f, -4.f, 0.f, 0.5f, 0.f};
  const std::vector<float> s = per_channel_weight_scales(w, 2);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_FLOAT_EQ(s[0], 4.f / 127.f);
  EXPECT_EQ(s[1], 1.f);  // a channel of zeros
}

TEST(QuantizePass, NamedLayersBecomeInt8BehindOneSharedQuantizePerValue) {
  const InferenceGraph in = folded_small_graph();
  // The two branch convolutions read values of their own; the logits conv reads a third.
  QuantizationTable table = branches_and_logits();
  Result<InferenceGraph> q = quantize_layers(in, table);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(count_ops(q->graph, "quantize"), 3);
  EXPECT_EQ(q->graph.nodes.size(), in.graph.nodes.size() + 3);
  for (size_t i = 0; i < q->graph.nodes.size(); ++i) {
    const Node& node = q->graph.nodes[i];
    for (ValueId out : node.outputs)  // producers renumbered
      EXPECT_EQ(q->graph.values[static_cast<size_t>(out)].producer, static_cast<NodeId>(i));
    const auto* conv = std::get_if<Conv2dDesc>(&node.desc);
    if (conv == nullptr) continue;
    const bool named = table.layers.count(node.name) > 0;
    EXPECT_EQ(conv->int8.has_value(), named) << node.name;
    if (!named) continue;
    const ValueInfo& x = q->graph.values[static_cast<size_t>(node.inputs[0])];
    EXPECT_EQ(x.dtype, DType::u8) << node.name;
    const Node& quantize = q->graph.nodes[static_cast<size_t>(x.producer)];
    ASSERT_TRUE(std::holds_alternative<QuantizeDesc>(quantize.desc));
    EXPECT_EQ(std::get<QuantizeDesc>(quantize.desc).scale, table.layers[node.name].input_scale);
    EXPECT_LT(static_cast<size_t>(x.producer), i);  // still topological
    EXPECT_EQ(conv->int8->input_scale, table.layers[node.name].input_scale);
    const std::vector<float>& w = q->values[static_cast<size_t>(node.params[0])];
    EXPECT_EQ(conv->int8->weight_scales, per_channel_weight_scales(w, conv->out_channels));
  }
}

TEST(QuantizePass, TwoLayersReadingOneValueAtOneScaleShareTheQuantize) {
  InferenceGraph in = folded_small_graph();
  // Make the second branch conv read what the first reads.
  ValueId first_input = kNone;
  for (Node& node : in.graph.nodes) {
    if (node.name == "Net/Mixed/Branch_0/Conv2d_0a_1x1") first_input = node.inputs[0];
    if (node.name == "Net/Mixed/Branch_1/Conv2d_0b_1x1") node.inputs[0] = first_input;
  }
  ASSERT_NE(first_input, kNone);
  QuantizationTable table;
  table.layers["Net/Mixed/Branch_0/Conv2d_0a_1x1"] = {0.05f, {}};
  table.layers["Net/Mixed/Branch_1/Conv2d_0b_1x1"] = {0.05f, {}};
  Result<InferenceGraph> q = quantize_layers(in, table);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(count_ops(q->graph, "quantize"), 1);
  table.layers["Net/Mixed/Branch_1/Conv2d_0b_1x1"] = {0.07f, {}};  // another scale: its own
  q = quantize_layers(in, table);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(count_ops(q->graph, "quantize"), 2);
}

TEST(QuantizePass, ConvolutionsTheBackendTurnsDownStayFloat32) {
  const InferenceGraph in = folded_small_graph();
  QuantizationTable table = branches_and_logits();
  int asked = 0;
  const Int8Pays pays = [&](const Conv2dDesc& d) -> Result<bool> {
    // It is asked with the int8 fields the layer would run with.
    EXPECT_TRUE(d.int8.has_value());
    EXPECT_FALSE(d.int8 && d.int8->output_scale);
    ++asked;
    return d.int8 && d.int8->input_scale != 0.02f;  // the logits layer stays float32
  };
  Result<InferenceGraph> q = quantize_layers(in, table, pays);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(q->stats.int8_layers_in_float32, 1);
  EXPECT_EQ(count_ops(q->graph, "quantize"), 2);
  for (const Node& node : q->graph.nodes) {
    const auto* conv = std::get_if<Conv2dDesc>(&node.desc);
    if (conv == nullptr) continue;
    const bool int8 = node.name == "Net/Mixed/Branch_0/Conv2d_0a_1x1" ||
                      node.name == "Net/Mixed/Branch_1/Conv2d_0b_1x1";
    EXPECT_EQ(conv->int8.has_value(), int8) << node.name;
    const ValueInfo& x = q->graph.values[static_cast<size_t>(node.inputs[0])];
    EXPECT_EQ(x.dtype, int8 ? DType::u8 : DType::f32) << node.name;
  }

  // A backend that cannot answer fails the pass, naming the layer.
  const Int8Pays broken = [](const Conv2dDesc&) -> Result<bool> { return error("no timing"); };
  q = quantize_layers(in, table, broken);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("int8 layer Net/"), std::string::npos)
      << q.status().message();
  EXPECT_NE(q.status().message().find("no timing"), std::string::npos);
}

TEST(QuantizePass, EntriesThatDoNotFitAreErrorsNamingTheLayer) {
  const InferenceGraph in = folded_small_graph();
  QuantizationTable table;
  table.layers["Net/Nowhere"] = {0.05f, {}};
  Result<InferenceGraph> q = quantize_layers(in, table);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("Net/Nowhere"), std::string::npos);
  table.layers.clear();
  table.layers["Net/Logits/Conv2d_1c_1x1"] = {0.f, {}};
  q = quantize_layers(in, table);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(q.status().message().find("input scale"), std::string::npos);
  table.layers.clear();
  table.layers["Net/Mixed"] = {0.05f, {}};  // a concat
  q = quantize_layers(in, table);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("not a convolution or dense layer"), std::string::npos);
}

// images -> A (f32: it reads the images) -> B -> C -> {D, E} -> concat(D, E[, C]) -> F -> logits,
// every convolution with a batch norm and ReLU; B to F int8, D and E at one scale.
InferenceGraph chain_graph(bool concat_reads_c) {
  GraphBuilder b(false);
  const ValueId images = b.images(Shape{2, 5, 5, 3});
  GraphBuilder::ConvOptions conv;
  conv.filters = 4;
  GraphBuilder::BatchNormOptions bn;
  bn.relu = true;
  const auto layer = [&](ValueId x, const std::string& name) {
    return b.batch_norm(b.conv2d(x, conv, name), bn, name);
  };
  const ValueId c = layer(layer(layer(images, "Net/A"), "Net/B"), "Net/C");
  std::vector<ValueId> parts = {layer(c, "Net/D"), layer(c, "Net/E")};
  if (concat_reads_c) parts.push_back(c);
  const ValueId f = layer(b.concat(parts, "Net/Mixed"), "Net/F");
  b.set_logits(b.dense(b.global_avg_pool(f, "Net/Pool"), 3,
                       ParamInit{ParamInit::Kind::truncated_normal, 0.1f}, "Net/Logits"));
  const Graph g = b.finish();
  InferenceGraph folded =
      prepare_inference_graph(g, testing::source_of(g, testing::random_param_values(g, 4))).value();
  QuantizationTable table;
  for (const char* name : {"Net/B", "Net/C", "Net/F"}) table.layers[name] = {0.05f, {}};
  table.layers["Net/D"] = table.layers["Net/E"] = {0.03f, {}};
  return quantize_layers(std::move(folded), table).value();
}

const Conv2dDesc& conv_named(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes)
    if (node.name == name) return std::get<Conv2dDesc>(node.desc);
  ADD_FAILURE() << "no " << name;
  return std::get<Conv2dDesc>(graph.nodes.at(0).desc);
}

TEST(QuantizePass, ConvolutionsThatOnlyInt8LayersReadWriteU8) {
  const InferenceGraph before = chain_graph(false);
  EXPECT_EQ(count_ops(before.graph, "quantize"), 4);  // before B, C, D+E, F
  const InferenceGraph after = write_int8_outputs(before);
  EXPECT_EQ(after.stats.int8_outputs, 2);
  EXPECT_EQ(count_ops(after.graph, "quantize"), 2);  // before B (A is f32), before F (concat)
  EXPECT_EQ(conv_named(after.graph, "Net/B").int8->output_scale, 0.05f);  // C's input scale
  EXPECT_EQ(conv_named(after.graph, "Net/C").int8->output_scale, 0.03f);  // D's and E's
  for (const char* name : {"Net/D", "Net/E", "Net/F"})
    EXPECT_FALSE(conv_named(after.graph, name).int8->output_scale) << name;
  for (size_t i = 0; i < after.graph.nodes.size(); ++i) {
    const Node& node = after.graph.nodes[i];
    for (ValueId out : node.outputs)
      EXPECT_EQ(after.graph.values[static_cast<size_t>(out)].producer, static_cast<NodeId>(i));
    if (const auto* conv = std::get_if<Conv2dDesc>(&node.desc); conv && conv->int8) {
      const ValueInfo& x = after.graph.values[static_cast<size_t>(node.inputs[0])];
      EXPECT_EQ(x.dtype, DType::u8) << node.name;
      EXPECT_LT(static_cast<size_t>(x.producer), i) << node.name;
      const ValueInfo& y = after.graph.values[static_cast<size_t>(node.outputs[0])];
      EXPECT_EQ(y.dtype, conv->int8->output_scale ? DType::u8 : DType::f32) << node.name;
    }
  }
}

TEST(QuantizePass, AConvolutionAnF32OpAlsoReadsKeepsItsF32Output) {
  const InferenceGraph after = write_int8_outputs(chain_graph(true));
  EXPECT_EQ(after.stats.int8_outputs, 1);  // B only: the concat reads C's output
  EXPECT_FALSE(conv_named(after.graph, "Net/C").int8->output_scale);
  EXPECT_EQ(count_ops(after.graph, "quantize"), 3);
}

}  // namespace
}  // namespace ic
