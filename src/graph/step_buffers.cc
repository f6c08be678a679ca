#include "graph/step_buffers.h"

#include <algorithm>

namespace ic {

namespace {

size_t value_bytes(const ValueInfo& value) {
  return static_cast<size_t>(value.shape.numel()) * dtype_size(value.dtype);
}

int32_t add_request(StepBuffers& buffers, std::string name, size_t bytes,
                    std::vector<LiveInterval> live) {
  buffers.requests.push_back(BufferRequest{std::move(name), bytes, std::move(live)});
  return static_cast<int32_t>(buffers.requests.size() - 1);
}

}  // namespace

Result<StepBuffers> plan_step_buffers(const Graph& graph, const AutodiffPlan* autodiff,
                                      const std::vector<ValueId>& storage_root,
                                      const std::vector<KernelSizes>& kernels) {
  const auto n = static_cast<int32_t>(graph.nodes.size());
  const size_t values = graph.values.size();
  const bool training = autodiff != nullptr;
  auto fwd = [](size_t node) { return static_cast<int32_t>(node); };
  auto bwd = [n](size_t node) { return 2 * n - 1 - static_cast<int32_t>(node); };
  auto runs_backward = [&](size_t node) { return training && autodiff->runs_backward[node]; };
  auto root = [&](ValueId v) { return static_cast<size_t>(storage_root[static_cast<size_t>(v)]); };

  StepBuffers buffers;
  buffers.last_step = std::max(training ? 2 * n - 1 : n - 1, 0);
  buffers.activation.assign(values, -1);
  buffers.gradient.assign(values, -1);
  buffers.saved.assign(graph.nodes.size(), -1);
  buffers.workspace.assign(graph.nodes.size(), -1);
  buffers.input_grad_scratch.resize(graph.nodes.size());
  buffers.param_grad_scratch.resize(graph.nodes.size());

  // Activation lifetimes, accumulated per storage root: [first, last].
  std::vector<LiveInterval> life(values, LiveInterval{-1, -1});
  auto extend = [&](size_t r, int32_t step) { life[r].last = std::max(life[r].last, step); };
  auto whole_step = [&](ValueId v) {
    if (v == kNone) return;
    const size_t r = root(v);
    life[r] = LiveInterval{0, buffers.last_step};
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    for (ValueId out : node.outputs) {
      const size_t r = root(out);
      if (life[r].first < 0) life[r] = LiveInterval{fwd(i), fwd(i)};
      if (runs_backward(i) && kernels[i].backward_reads_outputs) extend(r, bwd(i));
    }
    for (ValueId in : node.inputs) {
      const size_t r = root(in);
      if (life[r].first < 0 && in != graph.images && in != graph.labels)
        return error("node ", node.name, " reads value ", graph.values[r].name,
                     " that no earlier node produces");
      extend(r, fwd(i));
      if (runs_backward(i) && kernels[i].backward_reads_inputs) extend(r, bwd(i));
    }
  }
  whole_step(graph.images);
  whole_step(graph.labels);
  whole_step(graph.logits);
  for (ValueId loss : graph.losses) whole_step(loss);

  for (size_t v = 0; v < values; ++v) {
    if (storage_root[v] != static_cast<ValueId>(v) || life[v].first < 0) continue;
    buffers.activation[v] = add_request(buffers, "activation " + graph.values[v].name,
                                        value_bytes(graph.values[v]), {life[v]});
  }
  for (size_t v = 0; v < values; ++v)
    buffers.activation[v] = buffers.activation[root(static_cast<ValueId>(v))];

  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (is_alias_node(node)) continue;
    const KernelSizes& k = kernels[i];
    const int32_t end = runs_backward(i) ? bwd(i) : fwd(i);
    if (k.saved_bytes > 0)
      buffers.saved[i] =
          add_request(buffers, "saved " + node.name, k.saved_bytes, {LiveInterval{fwd(i), end}});
    if (k.workspace_bytes > 0) {
      std::vector<LiveInterval> live{LiveInterval{fwd(i), fwd(i)}};
      if (runs_backward(i)) live.push_back(LiveInterval{bwd(i), bwd(i)});
      buffers.workspace[i] =
          add_request(buffers, "workspace " + node.name, k.workspace_bytes, std::move(live));
    }
    buffers.input_grad_scratch[i].assign(node.inputs.size(), -1);
    buffers.param_grad_scratch[i].assign(node.params.size(), -1);
  }
  if (!training) return buffers;

  for (size_t v = 0; v < values; ++v) {
    const auto& writers = autodiff->value_grad_writers[v];
    if (writers.empty()) continue;
    const ValueInfo& info = graph.values[v];
    // Read by the producer's backward, the last use in backward order.
    int32_t last = bwd(static_cast<size_t>(writers.back().node));
    if (info.producer != kNone && runs_backward(static_cast<size_t>(info.producer)))
      last = std::max(last, bwd(static_cast<size_t>(info.producer)));
    const size_t bytes = static_cast<size_t>(info.shape.numel()) * sizeof(float);
    buffers.gradient[v] =
        add_request(buffers, "gradient " + info.name, bytes,
                    {LiveInterval{bwd(static_cast<size_t>(writers.front().node)), last}});
    for (size_t k = 1; k < writers.size(); ++k) {
      const auto node = static_cast<size_t>(writers[k].node);
      buffers.input_grad_scratch[node][static_cast<size_t>(writers[k].slot)] = add_request(
          buffers, "gradient scratch " + info.name, bytes, {LiveInterval{bwd(node), bwd(node)}});
    }
  }
  for (size_t v = 0; v < values; ++v)
    buffers.gradient[v] = buffers.gradient[root(static_cast<ValueId>(v))];

  for (size_t p = 0; p < graph.params.size(); ++p) {
    const auto& writers = autodiff->param_grad_writers[p];
    const size_t bytes = static_cast<size_t>(graph.params[p].shape.numel()) * sizeof(float);
    for (size_t k = 1; k < writers.size(); ++k) {
      const auto node = static_cast<size_t>(writers[k].node);
      buffers.param_grad_scratch[node][static_cast<size_t>(writers[k].slot)] =
          add_request(buffers, "gradient scratch " + graph.params[p].name, bytes,
                      {LiveInterval{bwd(node), bwd(node)}});
    }
  }
  return buffers;
}

}  // namespace ic
