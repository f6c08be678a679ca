#include "random_int8_scales.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/compiled_graph.h"

namespace ic {

namespace {

// Whether an activation function's output is never negative (ReLU6's and sigmoid's; swish
// dips below 0).
bool non_negative_function(Activation f) { return f != Activation::swish; }

// Whether every element of `value` is >= 0 whatever the weights: a ReLU's, ReLU6's or
// sigmoid's output, or what pooling, concatenation, dropout and reshapes make of such outputs.
bool non_negative(const Graph& graph, ValueId value) {
  const NodeId producer = graph.values[static_cast<size_t>(value)].producer;
  if (producer == kNone) return false;  // a graph input: the images, in [-1, 1]
  const Node& node = graph.nodes[static_cast<size_t>(producer)];
  if (const auto* conv = std::get_if<Conv2dDesc>(&node.desc))
    return conv->fused_relu ||
           (conv->fused_activation && non_negative_function(*conv->fused_activation));
  if (const auto* add = std::get_if<AddDesc>(&node.desc)) return add->fused_relu;
  if (const auto* act = std::get_if<ActivationDesc>(&node.desc))
    return non_negative_function(act->function);
  if (std::holds_alternative<ReluDesc>(node.desc)) return true;
  const bool keeps_sign = std::holds_alternative<Pool2dDesc>(node.desc) ||
                          std::holds_alternative<GlobalAvgPoolDesc>(node.desc) ||
                          std::holds_alternative<ConcatDesc>(node.desc) ||
                          std::holds_alternative<DropoutDesc>(node.desc) ||
                          std::holds_alternative<ReshapeDesc>(node.desc);
  return keeps_sign && std::all_of(node.inputs.begin(), node.inputs.end(),
                                   [&](ValueId in) { return non_negative(graph, in); });
}

// The weights and output channels of a convolution or dense node; nullptr for other ops.
bool quantizable(const Node& node, int64_t* channels) {
  if (const auto* conv = std::get_if<Conv2dDesc>(&node.desc)) {
    *channels = conv->out_channels;
    return true;
  }
  if (const auto* dense = std::get_if<DenseDesc>(&node.desc)) {
    *channels = dense->out_features;
    return true;
  }
  return false;
}

// Where one probed value's per-channel maxima sit in the probe graph's output row.
struct ProbeSlot {
  int64_t offset = 0, channels = 0;
};

ValueId add_value(Graph& graph, const std::string& name, Shape shape) {
  graph.values.push_back(ValueInfo{name, std::move(shape), DType::f32, kNone});
  return static_cast<ValueId>(graph.values.size() - 1);
}

Node make_node(std::string name, OpDesc desc, ValueId in, ValueId out) {
  Node node;
  node.name = std::move(name);
  node.desc = std::move(desc);
  node.inputs = {in};
  node.outputs = {out};
  return node;
}

// `folded` with a global max pool after each value of `probed`, right after the node that
// writes it (so the big activation need not stay live), and the pooled [N,1,1,C] values
// concatenated into its logits, [N, sum C]: the only output a CompiledGraph hands back.
Graph probe_graph(Graph graph, const std::set<ValueId>& probed,
                  std::map<ValueId, ProbeSlot>* slots) {
  std::vector<Node> nodes;
  std::vector<ValueId> pooled;
  std::vector<Shape> pooled_shapes;
  int64_t offset = 0;
  const auto probe = [&](ValueId value) {
    const std::string name = graph.values[static_cast<size_t>(value)].name;
    Shape shape = graph.values[static_cast<size_t>(value)].shape;
    ValueId x = value;
    if (shape.rank() == 2) {  // a dense layer's input [N,K]: pooled as [N,1,1,K]
      const Shape as_image{shape[0], 1, 1, shape[1]};
      const ValueId y = add_value(graph, name + "/probe_reshape", as_image);
      nodes.push_back(make_node(name + "/probe_reshape", ReshapeDesc{shape, as_image}, x, y));
      x = y;
      shape = as_image;
    }
    Pool2dDesc pool;
    pool.input = shape;
    pool.kind = PoolKind::max;
    pool.kernel_h = static_cast<int>(shape.h());
    pool.kernel_w = static_cast<int>(shape.w());
    pool.padding = Padding::valid;
    pool.training = false;
    const ValueId y = add_value(graph, name + "/probe_max", pool.output());
    nodes.push_back(make_node(name + "/probe_max", pool, x, y));
    pooled.push_back(y);
    pooled_shapes.push_back(pool.output());
    (*slots)[value] = ProbeSlot{offset, shape.c()};
    offset += shape.c();
  };
  for (Node& node : graph.nodes) {
    const std::vector<ValueId> outputs = node.outputs;
    nodes.push_back(std::move(node));
    for (ValueId out : outputs)
      if (probed.count(out) != 0) probe(out);
  }
  const ConcatDesc concat{pooled_shapes};
  const ValueId all = add_value(graph, "probe/concat", concat.output());
  Node gather;
  gather.name = "probe/concat";
  gather.desc = concat;
  gather.inputs = pooled;
  gather.outputs = {all};
  nodes.push_back(std::move(gather));
  const Shape batch_rows{concat.output().n(), offset};
  const ValueId rows = add_value(graph, "probe/rows", batch_rows);
  nodes.push_back(make_node("probe/rows", ReshapeDesc{concat.output(), batch_rows}, all, rows));
  graph.logits = rows;
  graph.nodes = std::move(nodes);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (ValueId out : graph.nodes[i].outputs)
      graph.values[static_cast<size_t>(out)].producer = static_cast<NodeId>(i);
  return graph;
}

}  // namespace

Result<QuantizationTable> random_data_int8_scales(const Graph& graph, const ParamSource& source,
                                                  Backend& backend,
                                                  const std::vector<float>& images) {
  InferenceGraphOptions f32;
  f32.time_algorithms = false;  // one forward: timing the implementations would cost more
  IC_ASSIGN_OR_RETURN(InferenceGraph folded, prepare_inference_graph(graph, source, f32));

  std::set<ValueId> probed;
  for (const Node& node : folded.graph.nodes) {
    int64_t channels = 0;
    if (quantizable(node, &channels) && non_negative(folded.graph, node.inputs.at(0)))
      probed.insert(node.inputs.at(0));
  }
  if (probed.empty()) return error("the model has no layer whose input is a ReLU's output");

  std::map<ValueId, ProbeSlot> slots;
  InferenceGraph probe{probe_graph(folded.graph, probed, &slots), folded.values, folded.stats};
  IC_ASSIGN_OR_RETURN(DeviceParams params, upload_params(backend, probe));
  IC_ASSIGN_OR_RETURN(
      std::unique_ptr<CompiledGraph> compiled,
      CompiledGraph::compile(probe.graph, backend, params.layout, params.binding()));
  const Shape& rows = probe.graph.values[static_cast<size_t>(probe.graph.logits)].shape;
  const Shape& input = probe.graph.values[static_cast<size_t>(probe.graph.images)].shape;
  if (static_cast<size_t>(input.numel()) != images.size())
    return invalid_argument("random_data_int8_scales: ", images.size(), " image floats for a ",
                            input.str(), " input");
  backend.upload(compiled->images(), images.data(), images.size() * sizeof(float));
  compiled->forward({});
  std::vector<float> maxima(static_cast<size_t>(rows.numel()));
  backend.download(maxima.data(), compiled->logits(), maxima.size() * sizeof(float));
  backend.synchronize();

  QuantizationTable table;
  table.calibration_images = input.n();
  table.calibration_data = "random images (inception_bench: for speed only, not accuracy)";
  const auto row_width = static_cast<size_t>(rows[1]);
  for (const Node& node : folded.graph.nodes) {
    int64_t channels = 0;
    if (!quantizable(node, &channels) || probed.count(node.inputs.at(0)) == 0) continue;
    const ProbeSlot slot = slots.at(node.inputs.at(0));
    float largest = 0.f;
    for (size_t n = 0; n < static_cast<size_t>(input.n()); ++n)
      for (int64_t c = 0; c < slot.channels; ++c)
        largest = std::max(largest, maxima[n * row_width + static_cast<size_t>(slot.offset + c)]);
    LayerQuantization layer;
    // A layer that read only zeros gets scale 1: any positive scale quantizes zeros exactly.
    layer.input_scale = largest > 0.f ? largest / static_cast<float>(kInt8ActivationMax) : 1.f;
    layer.weight_scales =
        per_channel_weight_scales(folded.values[static_cast<size_t>(node.params.at(0))], channels);
    table.layers[node.name] = std::move(layer);
  }
  return table;
}

}  // namespace ic
