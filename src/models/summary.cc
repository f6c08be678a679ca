#include "models/summary.h"

#include <algorithm>
#include <iomanip>

namespace ic {
namespace {

int64_t batch_of(const Graph& graph) {
  if (graph.images == kNone) return 1;
  const Shape& images = graph.values.at(graph.images).shape;
  return images.rank() > 0 && images[0] > 0 ? images[0] : 1;
}

int64_t node_parameters(const Graph& graph, const Node& node) {
  int64_t total = 0;
  for (ParamId p : node.params)
    if (graph.params.at(p).trainable) total += graph.params.at(p).shape.numel();
  return total;
}

// "149x149x32"
std::string dims_text(const Shape& shape) {
  std::string text;
  for (int axis = 0; axis < shape.rank(); ++axis) {
    if (axis > 0) text += 'x';
    text += std::to_string(shape[axis]);
  }
  return text.empty() ? "scalar" : text;
}

}  // namespace

std::vector<SummaryRow> summary_rows(const Graph& graph) {
  const int64_t batch = batch_of(graph);
  std::vector<SummaryRow> rows;
  NodeId next = 0;  // first node not yet in a row
  for (const auto& [name, value] : graph.endpoints) {
    const ValueInfo& info = graph.values.at(value);
    SummaryRow row;
    row.endpoint = name;
    const std::vector<int64_t>& dims = info.shape.dims();
    row.shape =
        Shape(std::vector<int64_t>(dims.begin() + std::min<size_t>(1, dims.size()), dims.end()));
    for (; info.producer != kNone && next <= info.producer; ++next) {
      const Node& node = graph.nodes.at(next);
      row.parameters += node_parameters(graph, node);
      row.multiply_adds += op_multiply_adds(node.desc) / batch;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void print_summary(const Graph& graph, std::ostream& out) {
  const std::vector<SummaryRow> rows = summary_rows(graph);
  size_t name_width = 8;
  for (const SummaryRow& row : rows) name_width = std::max(name_width, row.endpoint.size());
  const Shape& images = graph.values.at(graph.images).shape;
  out << "images: " << images.str() << " (numbers below are per image)\n";
  out << std::left << std::setw(static_cast<int>(name_width) + 2) << "endpoint" << std::setw(18)
      << "output shape" << std::right << std::setw(12) << "parameters" << std::setw(16)
      << "multiply-adds"
      << "\n";
  for (const SummaryRow& row : rows) {
    out << std::left << std::setw(static_cast<int>(name_width) + 2) << row.endpoint << std::setw(18)
        << dims_text(row.shape) << std::right << std::setw(12) << row.parameters << std::setw(16)
        << row.multiply_adds << "\n";
  }
  int64_t non_trainable = 0;
  for (const ParamInfo& p : graph.params)
    if (!p.trainable) non_trainable += p.shape.numel();
  out << "trainable parameters: " << graph.trainable_parameter_count() << "\n";
  out << "non-trainable parameters: " << non_trainable << "\n";
  out << "multiply-adds: " << graph.multiply_adds() / batch_of(graph) << "\n";
}

}  // namespace ic
