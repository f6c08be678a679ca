#include "graph/passes.h"

#include <algorithm>

namespace ic {

std::vector<bool> read_after_forward(const Graph& graph) {
  std::vector<bool> read(graph.values.size(), false);
  auto mark = [&](ValueId v) {
    if (v != kNone) read[static_cast<size_t>(v)] = true;
  };
  mark(graph.logits);
  mark(graph.images);
  mark(graph.labels);
  for (ValueId v : graph.losses) mark(v);
  return read;
}

std::vector<bool> externally_visible(const Graph& graph) {
  std::vector<bool> visible = read_after_forward(graph);
  for (const auto& endpoint : graph.endpoints) visible[static_cast<size_t>(endpoint.second)] = true;
  return visible;
}

Graph without_nodes(Graph graph, const std::vector<bool>& removed) {
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
  for (ValueInfo& value : graph.values) value.producer = kNone;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (ValueId out : graph.nodes[i].outputs)
      graph.values[static_cast<size_t>(out)].producer = static_cast<NodeId>(i);
  return graph;
}

void drop_unproduced_endpoints(Graph& graph) {
  std::erase_if(graph.endpoints, [&](const auto& endpoint) {
    const ValueId v = endpoint.second;
    return v != graph.images && graph.values[static_cast<size_t>(v)].producer == kNone;
  });
}

std::vector<std::vector<NodeId>> value_consumers(const Graph& graph) {
  std::vector<std::vector<NodeId>> consumers(graph.values.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (ValueId in : graph.nodes[i].inputs)
      consumers[static_cast<size_t>(in)].push_back(static_cast<NodeId>(i));
  return consumers;
}

Graph fuse_batch_norm_relu(const Graph& graph, PassStats* stats) {
  Graph out = graph;
  const auto consumers = value_consumers(graph);
  const auto visible = externally_visible(graph);
  std::vector<bool> removed(graph.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    auto* bn = std::get_if<BatchNormDesc>(&out.nodes[i].desc);
    if (bn == nullptr || bn->fused_relu) continue;
    const ValueId y = out.nodes[i].outputs.at(0);
    const auto& readers = consumers[static_cast<size_t>(y)];
    if (readers.size() != 1 || visible[static_cast<size_t>(y)]) continue;
    Node& relu = out.nodes[static_cast<size_t>(readers[0])];
    if (!std::holds_alternative<ReluDesc>(relu.desc)) continue;
    bn->fused_relu = true;
    out.nodes[i].outputs[0] = relu.outputs.at(0);
    removed[static_cast<size_t>(readers[0])] = true;
    ++fused;
  }
  if (stats != nullptr) stats->fused_batch_norm_relu += fused;
  return fused == 0 ? out : without_nodes(std::move(out), removed);
}

Graph remove_identity_dropout(const Graph& graph, PassStats* stats) {
  if (graph.training) return graph;
  Graph out = graph;
  // replacement[v]: the value that readers of v read instead (v itself if kept).
  std::vector<ValueId> replacement(graph.values.size());
  for (size_t v = 0; v < replacement.size(); ++v) replacement[v] = static_cast<ValueId>(v);
  std::vector<bool> removed(graph.nodes.size(), false);
  int count = 0;
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    Node& node = out.nodes[i];
    for (ValueId& in : node.inputs) in = replacement[static_cast<size_t>(in)];
    if (!std::holds_alternative<DropoutDesc>(node.desc)) continue;
    replacement[static_cast<size_t>(node.outputs.at(0))] = node.inputs.at(0);
    removed[i] = true;
    ++count;
  }
  if (count == 0) return out;
  auto redirect = [&](ValueId& v) {
    if (v != kNone) v = replacement[static_cast<size_t>(v)];
  };
  redirect(out.logits);
  for (ValueId& v : out.losses) redirect(v);
  for (auto& endpoint : out.endpoints) redirect(endpoint.second);
  if (stats != nullptr) stats->removed_identity_dropout += count;
  return without_nodes(std::move(out), removed);
}

Graph optimize_graph(const Graph& graph, PassStats* stats) {
  return fuse_batch_norm_relu(remove_identity_dropout(graph, stats), stats);
}

}  // namespace ic
