#include "graph/inference_passes.h"

#include <cmath>
#include <utility>

#include "graph/passes.h"

namespace ic {

namespace {

const std::vector<float>* optional_values(const ParamValues& values, const Node& node,
                                          size_t slot) {
  if (slot >= node.params.size()) return nullptr;
  return &values[static_cast<size_t>(node.params[slot])];
}

// The convolution producing `v` when it is one that a following per-channel op may be folded
// or fused into: no activation after it yet, `v` read by exactly one node, not read by the
// caller.
Node* foldable_conv(Graph& graph, ValueId v, const std::vector<std::vector<NodeId>>& consumers,
                    const std::vector<bool>& visible) {
  const auto index = static_cast<size_t>(v);
  const NodeId producer = graph.values[index].producer;
  if (producer == kNone || consumers[index].size() != 1 || visible[index]) return nullptr;
  Node& node = graph.nodes[static_cast<size_t>(producer)];
  const auto* conv = std::get_if<Conv2dDesc>(&node.desc);
  if (conv == nullptr || conv->fused_relu || conv->fused_activation) return nullptr;
  return &node;
}

ParamId add_folded_param(InferenceGraph& out, const std::string& name, Shape shape,
                         std::vector<float> values) {
  out.graph.params.push_back(
      ParamInfo{name, std::move(shape), ParamInit{ParamInit::Kind::zeros, 0.f}, true, false});
  out.values.push_back(std::move(values));
  return static_cast<ParamId>(out.graph.params.size() - 1);
}

}  // namespace

Status check_param_values(const Graph& graph, const ParamValues& values) {
  if (values.size() != graph.params.size())
    return error(values.size(), " parameter values for a graph of ", graph.params.size(),
                 " parameters");
  for (size_t p = 0; p < values.size(); ++p) {
    const ParamInfo& param = graph.params[p];
    if (values[p].size() != static_cast<size_t>(param.shape.numel()))
      return error("parameter ", param.name, " ", param.shape.str(), " has ", values[p].size(),
                   " values");
  }
  return Status();
}

Result<InferenceGraph> fold_batch_norm(const Graph& graph, const ParamValues& values) {
  if (graph.training)
    return error(
        "fold_batch_norm needs an inference graph (its batch norms must use moving "
        "statistics)");
  IC_RETURN_IF_ERROR(check_param_values(graph, values));
  InferenceGraph out{graph, values, {}};
  const auto consumers = value_consumers(graph);
  const auto visible = externally_visible(graph);
  std::vector<bool> removed(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& bn_node = graph.nodes[i];
    const auto* bn = std::get_if<BatchNormDesc>(&bn_node.desc);
    if (bn == nullptr || bn->training) continue;
    Node* conv_node = foldable_conv(out.graph, bn_node.inputs.at(0), consumers, visible);
    if (conv_node == nullptr) continue;
    auto& conv = std::get<Conv2dDesc>(conv_node->desc);

    const std::vector<float>& beta = values[static_cast<size_t>(bn_node.params.at(0))];
    const std::vector<float>* gamma = bn->has_gamma ? optional_values(values, bn_node, 1) : nullptr;
    const std::vector<float>& mean = values[static_cast<size_t>(bn_node.state.at(0))];
    const std::vector<float>& variance = values[static_cast<size_t>(bn_node.state.at(1))];
    const std::vector<float>& weights = values[static_cast<size_t>(conv_node->params.at(0))];
    const std::vector<float>* bias =
        conv.has_bias ? optional_values(values, *conv_node, 1) : nullptr;
    const auto channels = static_cast<size_t>(conv.out_channels);
    if (beta.size() != channels || mean.size() != channels || variance.size() != channels ||
        (gamma != nullptr && gamma->size() != channels))
      return error("batch norm ", bn_node.name, " has statistics of ", mean.size(),
                   " channels after a convolution of ", channels);

    std::vector<double> scale(channels);
    std::vector<float> folded_bias(channels);
    for (size_t c = 0; c < channels; ++c) {
      const double spread = static_cast<double>(variance[c]) + static_cast<double>(bn->epsilon);
      if (!(spread > 0.0))
        return error("batch norm ", bn_node.name, ": moving variance ", variance[c],
                     " + epsilon is not positive in channel ", c);
      scale[c] = (gamma != nullptr ? static_cast<double>((*gamma)[c]) : 1.0) / std::sqrt(spread);
      const double b = bias != nullptr ? static_cast<double>((*bias)[c]) : 0.0;
      folded_bias[c] = static_cast<float>(static_cast<double>(beta[c]) +
                                          (b - static_cast<double>(mean[c])) * scale[c]);
    }
    std::vector<float> folded_weights(weights.size());
    for (size_t k = 0; k < weights.size(); ++k)  // HWIO: the output channel is innermost
      folded_weights[k] = static_cast<float>(static_cast<double>(weights[k]) * scale[k % channels]);

    const Shape weight_shape = out.graph.params[static_cast<size_t>(conv_node->params[0])].shape;
    for (const char* suffix : {"/folded_weights", "/folded_bias"})
      if (out.graph.find_param(conv_node->name + suffix) != kNone)
        return error("convolution ", conv_node->name, " is folded twice");
    const ParamId w = add_folded_param(out, conv_node->name + "/folded_weights", weight_shape,
                                       std::move(folded_weights));
    const ParamId b = add_folded_param(out, conv_node->name + "/folded_bias",
                                       Shape{conv.out_channels}, std::move(folded_bias));
    conv.has_bias = true;
    conv.fused_relu = bn->fused_relu;
    conv.training = false;
    conv_node->params = {w, b};
    conv_node->outputs[0] = bn_node.outputs.at(0);
    removed[i] = true;
    ++out.stats.folded_batch_norm;
    out.stats.fused_conv_relu += bn->fused_relu ? 1 : 0;
  }
  if (out.stats.folded_batch_norm > 0) out.graph = without_nodes(std::move(out.graph), removed);
  return out;
}

InferenceGraph fuse_conv_activations(InferenceGraph in) {
  if (in.graph.training) return in;
  const auto consumers = value_consumers(in.graph);
  const auto visible = externally_visible(in.graph);
  std::vector<bool> removed(in.graph.nodes.size(), false);
  int relus = 0, activations = 0;
  for (size_t i = 0; i < in.graph.nodes.size(); ++i) {
    const Node& node = in.graph.nodes[i];
    const bool relu = std::holds_alternative<ReluDesc>(node.desc);
    const auto* activation = std::get_if<ActivationDesc>(&node.desc);
    if (!relu && activation == nullptr) continue;
    Node* conv_node = foldable_conv(in.graph, node.inputs.at(0), consumers, visible);
    if (conv_node == nullptr) continue;
    auto& conv = std::get<Conv2dDesc>(conv_node->desc);
    if (relu) {
      conv.fused_relu = true;
      ++relus;
    } else {
      conv.fused_activation = activation->function;
      ++activations;
    }
    conv.training = false;
    conv_node->outputs[0] = node.outputs.at(0);
    removed[i] = true;
  }
  if (relus + activations == 0) return in;
  in.stats.fused_conv_relu += relus;
  in.stats.fused_conv_activation += activations;
  in.graph = without_nodes(std::move(in.graph), removed);
  return in;
}

namespace {

// Whether `d` is a convolution a depthwise one may be fused after (fuse_depthwise_into_pointwise).
bool fusable_pointwise(const Conv2dDesc& d) {
  return !d.training && !d.int8 && !d.fused_depthwise && d.groups == 1 && d.kernel_h == 1 &&
         d.kernel_w == 1 && d.stride_h == 1 && d.stride_w == 1 && d.has_bias &&
         d.compute == DType::f32 && d.activations == DType::f32;
}

// Whether `d` is a depthwise convolution that can run inside the one before it.
bool fusable_depthwise(const Conv2dDesc& d) {
  return !d.training && !d.int8 && d.depthwise() && d.kernel_h == 3 && d.kernel_w == 3 &&
         d.stride_h == d.stride_w && (d.stride_h == 1 || d.stride_h == 2) &&
         d.padding == Padding::same && d.has_bias && d.compute == DType::f32 &&
         d.activations == DType::f32;
}

}  // namespace

InferenceGraph fuse_depthwise_into_pointwise(
    InferenceGraph in, const std::function<bool(const Conv2dDesc&)>& accepts) {
  if (in.graph.training || !accepts) return in;
  const auto consumers = value_consumers(in.graph);
  // Not externally_visible: an inference graph keeps endpoints only as names, and a fused
  // pointwise output (each of MobileNet v1's is one) is no longer written, so its name goes.
  const auto visible = read_after_forward(in.graph);
  std::vector<bool> removed(in.graph.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < in.graph.nodes.size(); ++i) {
    const Node& dw_node = in.graph.nodes[i];
    const auto* dw = std::get_if<Conv2dDesc>(&dw_node.desc);
    if (dw == nullptr || !fusable_depthwise(*dw)) continue;
    const auto between = static_cast<size_t>(dw_node.inputs.at(0));
    const NodeId producer = in.graph.values[between].producer;
    if (producer == kNone || consumers[between].size() != 1 || visible[between]) continue;
    Node& pw_node = in.graph.nodes[static_cast<size_t>(producer)];
    auto* pw = std::get_if<Conv2dDesc>(&pw_node.desc);
    if (pw == nullptr || !fusable_pointwise(*pw)) continue;
    Conv2dDesc both = *pw;
    both.fused_depthwise = FusedDepthwise{dw->stride_h, dw->fused_relu, dw->fused_activation};
    if (!accepts(both)) continue;
    *pw = both;
    pw_node.params.insert(pw_node.params.end(), dw_node.params.begin(), dw_node.params.end());
    pw_node.outputs[0] = dw_node.outputs.at(0);
    removed[i] = true;
    ++fused;
  }
  if (fused == 0) return in;
  in.stats.fused_depthwise += fused;
  in.graph = without_nodes(std::move(in.graph), removed);
  drop_unproduced_endpoints(in.graph);
  return in;
}

namespace {

// The 1x1 stride-1 convolution (not int8) that alone reads the stride-1 average pool `pool`'s
// output, when it has fewer output than input channels; else null.
const Node* pointwise_reader(const Graph& graph, const Node& pool,
                             const std::vector<std::vector<NodeId>>& consumers,
                             const std::vector<bool>& visible) {
  const auto* p = std::get_if<Pool2dDesc>(&pool.desc);
  if (p == nullptr || p->kind != PoolKind::avg || p->stride_h != 1 || p->stride_w != 1)
    return nullptr;
  const auto out = static_cast<size_t>(pool.outputs.at(0));
  if (consumers[out].size() != 1 || visible[out]) return nullptr;
  const Node& reader = graph.nodes[static_cast<size_t>(consumers[out][0])];
  const auto* conv = std::get_if<Conv2dDesc>(&reader.desc);
  if (conv == nullptr || conv->int8 || conv->fused_activation || conv->kernel_h != 1 ||
      conv->kernel_w != 1 || conv->stride_h != 1 || conv->stride_w != 1 ||
      reader.inputs.at(0) != pool.outputs[0])
    return nullptr;
  return conv->out_channels < conv->input.c() ? &reader : nullptr;
}

}  // namespace

InferenceGraph pool_after_pointwise_conv(InferenceGraph in) {
  if (in.graph.training) return in;
  Graph& graph = in.graph;
  const auto consumers = value_consumers(graph);
  const auto visible = externally_visible(graph);
  // Per node: what replaces it (one or two nodes), in place, so the order stays topological.
  std::vector<std::vector<Node>> replaced(graph.nodes.size());
  std::vector<bool> touched(graph.nodes.size(), false);
  int moved = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& pool = graph.nodes[i];
    const Node* conv_node = pointwise_reader(graph, pool, consumers, visible);
    if (conv_node == nullptr) continue;
    const auto c = static_cast<size_t>(consumers[static_cast<size_t>(pool.outputs[0])][0]);
    if (touched[i] || touched[c]) continue;
    const auto& p = std::get<Pool2dDesc>(pool.desc);
    Conv2dDesc conv = std::get<Conv2dDesc>(conv_node->desc);
    const bool relu = conv.fused_relu;
    // The convolution, at the pool's place, on the pool's input.
    conv.input = p.input;
    conv.fused_relu = false;
    const auto convolved = static_cast<ValueId>(graph.values.size());
    graph.values.push_back(ValueInfo{conv_node->name, conv.output(), DType::f32, kNone});
    Node first = *conv_node;
    first.desc = conv;
    first.inputs = {pool.inputs.at(0)};
    first.outputs = {convolved};
    // The pool, at the convolution's place, on its output; then the ReLU.
    Pool2dDesc pooled = p;
    pooled.input = conv.output();
    const ValueId result = conv_node->outputs.at(0);
    ValueId pool_out = result;
    if (relu) {
      pool_out = static_cast<ValueId>(graph.values.size());
      graph.values.push_back(ValueInfo{pool.name, pooled.output(), DType::f32, kNone});
    }
    Node second = pool;
    second.desc = pooled;
    second.inputs = {convolved};
    second.outputs = {pool_out};
    replaced[i] = {std::move(first)};
    replaced[c] = {std::move(second)};
    if (relu)
      replaced[c].push_back(
          Node{conv_node->name + "/Relu", ReluDesc{pooled.output()}, {pool_out}, {result}, {}, {}});
    touched[i] = touched[c] = true;
    ++moved;
  }
  if (moved == 0) return in;
  std::vector<Node> nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!touched[i]) {
      nodes.push_back(std::move(graph.nodes[i]));
      continue;
    }
    for (Node& node : replaced[i]) nodes.push_back(std::move(node));
  }
  const std::vector<bool> none(nodes.size(), false);
  graph.nodes = std::move(nodes);
  graph = without_nodes(std::move(graph), none);  // recomputes every producer
  in.stats.pools_after_conv += moved;
  return in;
}

InferenceGraph remove_dead_nodes(InferenceGraph in) {
  Graph& graph = in.graph;
  std::vector<bool> needed(graph.values.size(), false);
  if (graph.logits != kNone) needed[static_cast<size_t>(graph.logits)] = true;
  for (ValueId loss : graph.losses) needed[static_cast<size_t>(loss)] = true;
  std::vector<bool> removed(graph.nodes.size(), true);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& node = graph.nodes[i];
    bool wanted = false;
    for (ValueId out : node.outputs) wanted = wanted || needed[static_cast<size_t>(out)];
    if (!wanted) continue;
    removed[i] = false;
    for (ValueId v : node.inputs) needed[static_cast<size_t>(v)] = true;
  }
  int count = 0;
  for (bool r : removed) count += r ? 1 : 0;
  if (count == 0) return in;
  graph = without_nodes(std::move(graph), removed);
  drop_unproduced_endpoints(graph);
  in.stats.removed_dead_nodes += count;
  return in;
}

InferenceGraph remove_unused_params(InferenceGraph in) {
  Graph& graph = in.graph;
  std::vector<bool> used(graph.params.size(), false);
  for (const Node& node : graph.nodes) {
    for (ParamId p : node.params) used[static_cast<size_t>(p)] = true;
    for (ParamId p : node.state) used[static_cast<size_t>(p)] = true;
  }
  std::vector<ParamId> renumbered(graph.params.size(), kNone);
  std::vector<ParamInfo> params;
  ParamValues values;
  for (size_t p = 0; p < graph.params.size(); ++p) {
    if (!used[p]) continue;
    renumbered[p] = static_cast<ParamId>(params.size());
    params.push_back(std::move(graph.params[p]));
    values.push_back(std::move(in.values[p]));
  }
  in.stats.removed_params += static_cast<int>(graph.params.size() - params.size());
  graph.params = std::move(params);
  in.values = std::move(values);
  for (Node& node : graph.nodes) {
    for (ParamId& p : node.params) p = renumbered[static_cast<size_t>(p)];
    for (ParamId& p : node.state) p = renumbered[static_cast<size_t>(p)];
  }
  return in;
}

}  // namespace ic
