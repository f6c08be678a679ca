// Helpers for the model-zoo tests (mobilenet_v1, mobilenet_v2, densenet121, squeezenet*,
// efficientnet_b0).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "models/model.h"
#include "models/model_test_util.h"
#include "models/summary.h"

namespace ic::testing {

// Nodes whose desc is a `Desc` and that pass `keep`.
template <typename Desc, typename Keep>
std::vector<const Node*> nodes_of(const Graph& graph, Keep keep) {
  std::vector<const Node*> out;
  for (const Node& node : graph.nodes)
    if (const auto* d = std::get_if<Desc>(&node.desc); d != nullptr && keep(node, *d))
      out.push_back(&node);
  return out;
}
template <typename Desc>
std::vector<const Node*> nodes_of(const Graph& graph) {
  return nodes_of<Desc>(graph, [](const Node&, const Desc&) { return true; });
}

inline const Node* node_named(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes)
    if (node.name == name) return &node;
  return nullptr;
}

// The output shape of the node `name` without the batch; {} when there is none.
inline std::vector<int64_t> node_dims(const Graph& graph, const std::string& name) {
  const Node* node = node_named(graph, name);
  if (node == nullptr) return {};
  const std::vector<int64_t>& dims = graph.values.at(node->outputs[0]).shape.dims();
  return std::vector<int64_t>(dims.begin() + 1, dims.end());
}

// The names of the end points, in order.
inline std::vector<std::string> endpoint_names(const Graph& graph) {
  std::vector<std::string> names;
  for (const auto& [name, value] : graph.endpoints) names.push_back(name);
  return names;
}

// --mode=summary's table at batch 1 (and 3, whose totals are per image too): its rows cover
// every parameter and multiply-add, and it prints the totals.
inline void expect_summary_totals(ModelOptions o, int64_t trainable, int64_t non_trainable,
                                  int64_t multiply_adds) {
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE(o.name + " batch " + std::to_string(batch));
    o.batch_size = batch;
    const Graph g = build_or_die(o);
    const std::vector<SummaryRow> rows = summary_rows(g);
    ASSERT_EQ(rows.size(), g.endpoints.size());
    int64_t params = 0, macs = 0;
    for (const SummaryRow& row : rows) {
      params += row.parameters;
      macs += row.multiply_adds;
    }
    EXPECT_EQ(params, trainable);
    EXPECT_EQ(macs, multiply_adds);
    std::ostringstream out;
    print_summary(g, out);
    const std::string text = out.str();
    EXPECT_NE(text.find("\ntrainable parameters: " + std::to_string(trainable) + "\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("\nnon-trainable parameters: " + std::to_string(non_trainable) + "\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("\nmultiply-adds: " + std::to_string(multiply_adds) + "\n"),
              std::string::npos)
        << text;
  }
}

// supported_image_sides() is [min, max], build_model() accepts both ends (as height, the
// width at the default) and rejects the sides just outside, naming them.
inline void expect_side_range(const std::string& name, int min, int max) {
  SCOPED_TRACE(name);
  ModelOptions o = options_for(name);
  o.batch_size = 1;
  Result<ImageSideRange> range = supported_image_sides(o);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->min, min);
  EXPECT_EQ(range->max, max);
  for (int side : {min, max == ImageSideRange{}.max ? 512 : max}) {
    o.height = side;
    EXPECT_TRUE(build_model(o).ok()) << side;
  }
  for (int side : {min - 1, max == ImageSideRange{}.max ? 0 : max + 1}) {
    if (side < 1) continue;
    o.height = side;
    Result<Graph> g = build_model(o);
    ASSERT_FALSE(g.ok()) << side;
    EXPECT_NE(g.status().message().find("height " + std::to_string(side)), std::string::npos)
        << g.status().message();
  }
}

}  // namespace ic::testing
