#include "graph/quantize_pass.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "graph/passes.h"

namespace ic {

namespace {

bool positive_finite(float v) { return v > 0.f && std::isfinite(v); }

// The int8 fields of a convolution or dense node and its output channels; nullptr otherwise.
std::optional<Int8Conv>* int8_slot(Node& node, int64_t* channels) {
  if (auto* conv = std::get_if<Conv2dDesc>(&node.desc)) {
    *channels = conv->out_channels;
    return &conv->int8;
  }
  if (auto* dense = std::get_if<DenseDesc>(&node.desc)) {
    *channels = dense->out_features;
    return &dense->int8;
  }
  return nullptr;
}

// Whether `node`, its int8 fields set, stays int8: a convolution asks `pays` where it is given
// (dense layers always stay).
Result<bool> stays_int8(const Node& node, const Int8Pays& pays) {
  const auto* conv = std::get_if<Conv2dDesc>(&node.desc);
  if (conv == nullptr || !pays) return true;
  Result<bool> worth_it = pays(*conv);
  if (!worth_it.ok()) return worth_it.status().with_context("int8 layer " + node.name);
  return worth_it;
}

}  // namespace

std::optional<Int8Conv>* int8_fields(Node& node) {
  int64_t channels = 0;
  return int8_slot(node, &channels);
}

uint32_t scale_key(float scale) {
  uint32_t bits = 0;
  std::memcpy(&bits, &scale, sizeof bits);
  return bits;
}

std::vector<float> per_channel_weight_scales(const std::vector<float>& weights, int64_t channels) {
  const auto c = static_cast<size_t>(channels);
  std::vector<float> largest(c, 0.f);
  for (size_t k = 0; k < weights.size(); ++k)
    largest[k % c] = std::max(largest[k % c], std::fabs(weights[k]));
  for (float& s : largest) s = s > 0.f ? s / static_cast<float>(kInt8WeightMax) : 1.f;
  return largest;
}

Result<InferenceGraph> quantize_layers(InferenceGraph in, const QuantizationTable& table,
                                       const Int8Pays& pays) {
  if (in.graph.training) return error("quantize_layers needs an inference graph");
  std::set<std::string> found;
  Graph& graph = in.graph;
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size() * 2);
  // (value, scale) -> the u8 value a Quantize node already wrote.
  std::map<std::pair<ValueId, uint32_t>, ValueId> quantized;
  for (Node& node : graph.nodes) {
    auto entry = table.layers.find(node.name);
    if (entry == table.layers.end()) {
      nodes.push_back(std::move(node));
      continue;
    }
    found.insert(node.name);
    const LayerQuantization& layer = entry->second;
    int64_t channels = 0;
    std::optional<Int8Conv>* slot = int8_slot(node, &channels);
    if (slot == nullptr)
      return invalid_argument("int8 layer ", node.name, " is a ", op_name(node.desc),
                              ", not a convolution or dense layer");
    if (!positive_finite(layer.input_scale))
      return invalid_argument("int8 layer ", node.name, ": input scale ", layer.input_scale,
                              " is not positive and finite");
    const std::vector<float>& weights = in.values.at(static_cast<size_t>(node.params.at(0)));
    if (auto* conv = std::get_if<Conv2dDesc>(&node.desc)) conv->constant_weights = true;
    *slot = Int8Conv{layer.input_scale, per_channel_weight_scales(weights, channels)};
    IC_ASSIGN_OR_RETURN(const bool int8, stays_int8(node, pays));
    if (!int8) {
      slot->reset();
      ++in.stats.int8_layers_in_float32;
      nodes.push_back(std::move(node));
      continue;
    }

    const ValueId x = node.inputs.at(0);
    const auto key = std::make_pair(x, scale_key(layer.input_scale));
    auto done = quantized.find(key);
    if (done == quantized.end()) {
      const ValueInfo source = graph.values[static_cast<size_t>(x)];
      graph.values.push_back(ValueInfo{source.name + "/quantized", source.shape, DType::u8, kNone});
      const auto q = static_cast<ValueId>(graph.values.size() - 1);
      Node quantize;
      quantize.name = source.name + "/quantize";
      quantize.desc = QuantizeDesc{source.shape, layer.input_scale, kInt8ActivationMax};
      quantize.inputs = {x};
      quantize.outputs = {q};
      nodes.push_back(std::move(quantize));
      done = quantized.emplace(key, q).first;
    }
    node.inputs[0] = done->second;
    nodes.push_back(std::move(node));
  }
  for (const auto& entry : table.layers)
    if (found.count(entry.first) == 0)
      return invalid_argument("int8 layer ", entry.first, " is not a layer of this model's graph");
  graph.nodes = std::move(nodes);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (ValueId out : graph.nodes[i].outputs)
      graph.values[static_cast<size_t>(out)].producer = static_cast<NodeId>(i);
  return in;
}

InferenceGraph write_int8_outputs(InferenceGraph in) {
  Graph& graph = in.graph;
  const std::vector<std::vector<NodeId>> consumers = value_consumers(graph);
  const std::vector<bool> visible = read_after_forward(graph);
  std::vector<bool> removed(graph.nodes.size(), false);
  for (Node& quantize : graph.nodes) {
    const auto* q = std::get_if<QuantizeDesc>(&quantize.desc);
    if (q == nullptr || q->source != DType::f32 || q->max_level != kInt8ActivationMax) continue;
    const auto x = static_cast<size_t>(quantize.inputs.at(0));
    const NodeId producer = graph.values[x].producer;
    if (producer == kNone || consumers[x].size() != 1 || visible[x]) continue;
    Node& conv_node = graph.nodes[static_cast<size_t>(producer)];
    auto* conv = std::get_if<Conv2dDesc>(&conv_node.desc);
    if (conv == nullptr || !conv->int8 || conv->int8->output_scale) continue;
    conv->int8->output_scale = q->scale;
    conv_node.outputs.at(0) = quantize.outputs.at(0);
    removed[static_cast<size_t>(&quantize - graph.nodes.data())] = true;
    ++in.stats.int8_outputs;
  }
  graph = without_nodes(std::move(graph), removed);  // recomputes every producer
  return in;
}

}  // namespace ic
