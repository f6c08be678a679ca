// pools_and_concats_in_u8 on a small graph shaped like Inception's blocks: which pools and
// concatenations go u8, at which scales, what requantizes; and on the CPU backend, that max
// pools and concatenations of u8 give the float32 path's logits bit for bit, and an average
// pool on u8 stays close to them.
#include "graph/u8_dataflow_pass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/graph.h"
#include "graph/inference_graph.h"
#include "graph/quantize_pass.h"
#include "inference_test_util.h"

namespace ic {
namespace {

using testing::count_ops;

struct U8GraphOptions {
  bool avg_pool = true;         // Branch_2: an average pool before its convolution
  float mixed_2_scale = 0.06f;  // what Net/F reads: Mixed_2's concatenation
};

// images -> A (f32: reads the images) -> B -> max pool -> C -> Mixed_1 = concat(D, E2(E1),
// G([avg pool])) -> Mixed_2 = concat(H, max pool) -> F -> global pool -> Logits (dense).
// Every convolution has a batch norm and ReLU; B onwards are int8.
InferenceGraph quantized_graph(const U8GraphOptions& o) {
  GraphBuilder b(false);
  const ValueId images = b.images(Shape{2, 9, 9, 3});
  GraphBuilder::ConvOptions conv;
  conv.filters = 4;
  conv.kernel_h = conv.kernel_w = 3;
  GraphBuilder::BatchNormOptions bn;
  bn.relu = true;
  const auto layer = [&](ValueId x, const std::string& name) {
    return b.batch_norm(b.conv2d(x, conv, name), bn, name);
  };
  const ValueId pooled =
      b.max_pool(layer(layer(images, "Net/A"), "Net/B"), 3, 2, Padding::valid, "Net/Pool_B");
  const ValueId c = layer(pooled, "Net/C");
  const ValueId g_input =
      o.avg_pool ? b.avg_pool(c, 3, 3, 1, Padding::same, "Net/Mixed_1/Branch_2/AvgPool") : c;
  const ValueId mixed_1 =
      b.concat({layer(c, "Net/D"), layer(layer(c, "Net/E1"), "Net/E2"), layer(g_input, "Net/G")},
               "Net/Mixed_1");
  const ValueId mixed_2 = b.concat(
      {layer(mixed_1, "Net/H"), b.max_pool(mixed_1, 3, 1, Padding::same, "Net/Mixed_2/MaxPool")},
      "Net/Mixed_2");
  b.set_logits(b.dense(b.global_avg_pool(layer(mixed_2, "Net/F"), "Net/Pool"), 3,
                       ParamInit{ParamInit::Kind::truncated_normal, 0.1f}, "Net/Logits"));
  const Graph g = b.finish();
  InferenceGraph folded =
      prepare_inference_graph(g, testing::source_of(g, testing::random_param_values(g, 7))).value();
  QuantizationTable table;
  table.layers["Net/B"] = {0.04f, {}};
  table.layers["Net/C"] = {0.05f, {}};                           // reads the max pool
  table.layers["Net/D"] = table.layers["Net/E1"] = {0.03f, {}};  // read C
  table.layers["Net/E2"] = {0.02f, {}};
  table.layers["Net/G"] = {o.avg_pool ? 0.025f : 0.03f, {}};  // the average pool's, or C's
  table.layers["Net/H"] = {0.045f, {}};                       // Mixed_1's
  table.layers["Net/F"] = {o.mixed_2_scale, {}};
  table.layers["Net/Logits"] = {0.02f, {}};
  return quantize_layers(std::move(folded), table).value();
}

const Node& node_named(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes)
    if (node.name == name) return node;
  ADD_FAILURE() << "no " << name;
  return graph.nodes.at(0);
}

DType output_type(const Graph& graph, const std::string& name) {
  return graph.values[static_cast<size_t>(node_named(graph, name).outputs.at(0))].dtype;
}

const Int8Conv& int8_of(const Graph& graph, const std::string& name) {
  return *std::get<Conv2dDesc>(node_named(graph, name).desc).int8;
}

TEST(U8Dataflow, PoolsAndConcatenationsBetweenInt8LayersMoveU8) {
  const InferenceGraph before = quantized_graph({});
  const InferenceGraph after = write_int8_outputs(pools_and_concats_in_u8(before));
  EXPECT_EQ(after.stats.u8_pools, 3);
  EXPECT_EQ(after.stats.u8_concats, 2);
  EXPECT_EQ(after.stats.requantized, 1);  // the max pool's Mixed_1 scale to Mixed_2's
  // Left: the images' side (A is f32), the requantize and the logits' (the global pool is f32).
  EXPECT_EQ(count_ops(after.graph, "quantize"), 3);
  for (const char* name : {"Net/Pool_B", "Net/Mixed_1/Branch_2/AvgPool", "Net/Mixed_1",
                           "Net/Mixed_2/MaxPool", "Net/Mixed_2"})
    EXPECT_EQ(output_type(after.graph, name), DType::u8) << name;
  // Every convolution from B to H writes u8 at its readers' scale.
  EXPECT_EQ(int8_of(after.graph, "Net/B").output_scale, 0.05f);  // the max pool's readers'
  EXPECT_EQ(int8_of(after.graph, "Net/C").output_scale, 0.03f);  // D's, E1's
  EXPECT_EQ(int8_of(after.graph, "Net/E1").output_scale, 0.02f);
  for (const char* name : {"Net/D", "Net/E2", "Net/G"})
    EXPECT_EQ(int8_of(after.graph, name).output_scale, 0.045f) << name;  // Mixed_1's
  EXPECT_EQ(int8_of(after.graph, "Net/H").output_scale, 0.06f);          // Mixed_2's
  EXPECT_FALSE(int8_of(after.graph, "Net/F").output_scale);              // the global pool's
  // G reads the average pool's u8 at the pool's input's scale, not its own calibrated one.
  EXPECT_EQ(int8_of(after.graph, "Net/G").input_scale, 0.03f);
  // Still a graph: each value made once, before its readers, and each int8 layer reads u8.
  for (size_t i = 0; i < after.graph.nodes.size(); ++i) {
    const Node& node = after.graph.nodes[i];
    for (ValueId out : node.outputs)
      EXPECT_EQ(after.graph.values[static_cast<size_t>(out)].producer, static_cast<NodeId>(i));
    for (ValueId in : node.inputs) {
      const NodeId producer = after.graph.values[static_cast<size_t>(in)].producer;
      if (in != after.graph.images) {
        EXPECT_LT(producer, static_cast<NodeId>(i)) << node.name;
      }
    }
    const auto* conv = std::get_if<Conv2dDesc>(&node.desc);
    if (conv != nullptr && conv->int8) {
      EXPECT_EQ(after.graph.values[static_cast<size_t>(node.inputs[0])].dtype, DType::u8);
    }
  }
}

TEST(U8Dataflow, AConcatenationAnF32OpReadsStaysF32) {
  InferenceGraph in = quantized_graph({});
  // The logits' dense layer in f32, reading Mixed_2 through the global pool: make the global
  // pool read Mixed_2 itself, so a float32 op reads the concatenation.
  const ValueId mixed_2 = node_named(in.graph, "Net/Mixed_2").outputs.at(0);
  for (Node& node : in.graph.nodes)
    if (node.name == "Net/Pool") node.inputs.at(0) = mixed_2;
  const InferenceGraph after = pools_and_concats_in_u8(in);
  EXPECT_EQ(output_type(after.graph, "Net/Mixed_2"), DType::f32);
  // Its max pool then has no u8 reader, so Mixed_1, which that pool reads, stays f32 too.
  EXPECT_EQ(output_type(after.graph, "Net/Mixed_2/MaxPool"), DType::f32);
  EXPECT_EQ(output_type(after.graph, "Net/Mixed_1"), DType::f32);
  EXPECT_EQ(after.stats.u8_concats, 0);
  EXPECT_EQ(after.stats.u8_pools, 2);  // Pool_B and the average pool: their readers are int8
}

std::vector<float> random_images(size_t count) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(count);
  for (float& v : images) v = pixel(rng);
  return images;
}

std::vector<float> logits_of(const InferenceGraph& g) {
  auto backend = testing::test_cpu_backend();
  if (!backend) return {};
  return testing::run_graph(*backend, g.graph, g.values, random_images(2 * 9 * 9 * 3));
}

TEST(U8Dataflow, MaxPoolsAndConcatenationsOfU8GiveTheSameLogitsBitForBit) {
  // No average pool, and Mixed_2 at Mixed_1's scale: nothing requantizes.
  const InferenceGraph before = quantized_graph({false, 0.045f});
  const InferenceGraph after = write_int8_outputs(pools_and_concats_in_u8(before));
  ASSERT_EQ(after.stats.u8_concats, 2);
  ASSERT_EQ(after.stats.requantized, 0);
  const std::vector<float> want = logits_of(write_int8_outputs(before));
  const std::vector<float> got = logits_of(after);
  ASSERT_EQ(want.size(), 6u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
  EXPECT_NE(*std::max_element(want.begin(), want.end()),
            *std::min_element(want.begin(), want.end()))
      << "logits all alike: the comparison shows nothing";
}

TEST(U8Dataflow, AnAveragePoolAndARequantizeOfU8StayCloseToTheF32Path) {
  const InferenceGraph before = quantized_graph({});
  const std::vector<float> want = logits_of(write_int8_outputs(before));
  const std::vector<float> got = logits_of(write_int8_outputs(pools_and_concats_in_u8(before)));
  ASSERT_EQ(want.size(), 6u);
  ASSERT_EQ(got.size(), want.size());
  float scale = 0, worst = 0;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  // Both round every activation to 7 bits; they round some differently.
  EXPECT_LT(worst, 0.05f * scale) << "worst " << worst << " of " << scale;
}

}  // namespace
}  // namespace ic
