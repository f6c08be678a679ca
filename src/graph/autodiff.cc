#include "graph/autodiff.h"

#include <algorithm>

namespace ic {

bool is_alias_node(const Node& node) { return std::holds_alternative<ReshapeDesc>(node.desc); }

std::vector<ValueId> storage_roots(const Graph& graph) {
  std::vector<ValueId> root(graph.values.size());
  for (size_t v = 0; v < root.size(); ++v) root[v] = static_cast<ValueId>(v);
  // Nodes are topological, so an alias's input already has its final root.
  for (const Node& node : graph.nodes)
    if (is_alias_node(node))
      root[static_cast<size_t>(node.outputs.at(0))] = root[static_cast<size_t>(node.inputs.at(0))];
  return root;
}

AutodiffPlan plan_autodiff(const Graph& graph) {
  const size_t values = graph.values.size();
  const size_t nodes = graph.nodes.size();
  AutodiffPlan plan;
  plan.storage_root = storage_roots(graph);

  auto has_trainable = [&](const Node& node) {
    return std::any_of(node.params.begin(), node.params.end(),
                       [&](ParamId p) { return graph.params[static_cast<size_t>(p)].trainable; });
  };

  // Forward sweep: values some trainable parameter influences.
  std::vector<bool> depends_on_param(values, false);
  for (const Node& node : graph.nodes) {
    bool depends = has_trainable(node);
    for (ValueId in : node.inputs) depends = depends || depends_on_param[static_cast<size_t>(in)];
    for (ValueId out : node.outputs) depends_on_param[static_cast<size_t>(out)] = depends;
  }
  // Backward sweep: values that influence a loss.
  std::vector<bool> reaches_loss(values, false);
  for (ValueId loss : graph.losses) reaches_loss[static_cast<size_t>(loss)] = true;
  for (size_t i = nodes; i-- > 0;) {
    const Node& node = graph.nodes[i];
    const bool reaches = std::any_of(node.outputs.begin(), node.outputs.end(), [&](ValueId out) {
      return reaches_loss[static_cast<size_t>(out)];
    });
    if (!reaches) continue;
    for (ValueId in : node.inputs) reaches_loss[static_cast<size_t>(in)] = true;
  }

  plan.needs_grad.assign(values, false);
  for (size_t v = 0; v < values; ++v) plan.needs_grad[v] = depends_on_param[v] && reaches_loss[v];

  plan.runs_backward.assign(nodes, false);
  for (size_t i = 0; i < nodes; ++i) {
    const Node& node = graph.nodes[i];
    if (is_alias_node(node)) continue;
    const bool reaches = std::any_of(node.outputs.begin(), node.outputs.end(), [&](ValueId out) {
      return reaches_loss[static_cast<size_t>(out)];
    });
    const bool input_needs = std::any_of(node.inputs.begin(), node.inputs.end(), [&](ValueId in) {
      return plan.needs_grad[static_cast<size_t>(in)];
    });
    plan.runs_backward[i] = reaches && (has_trainable(node) || input_needs);
  }

  // Writers, collected in backward order (reverse node order, slots in order).
  plan.value_grad_writers.assign(values, {});
  plan.param_grad_writers.assign(graph.params.size(), {});
  for (size_t i = nodes; i-- > 0;) {
    if (!plan.runs_backward[i]) continue;
    const Node& node = graph.nodes[i];
    for (size_t s = 0; s < node.inputs.size(); ++s) {
      const auto in = static_cast<size_t>(node.inputs[s]);
      if (!plan.needs_grad[in]) continue;
      plan.value_grad_writers[static_cast<size_t>(plan.storage_root[in])].push_back(
          GradSlot{static_cast<NodeId>(i), static_cast<int>(s)});
    }
    for (size_t s = 0; s < node.params.size(); ++s) {
      const auto p = static_cast<size_t>(node.params[s]);
      if (!graph.params[p].trainable) continue;
      plan.param_grad_writers[p].push_back(GradSlot{static_cast<NodeId>(i), static_cast<int>(s)});
    }
  }
  return plan;
}

}  // namespace ic
