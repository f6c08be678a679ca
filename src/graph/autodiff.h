// Which gradients a training step computes, and who writes them.
//
// A value needs a gradient when some trainable parameter influences it AND it influences a
// loss (so not the images, the labels, or a branch no loss reads). A node's backward runs
// when its output reaches a loss and it has trainable parameters or an input that needs a
// gradient; backward runs in reverse node order. Reshape outputs share their input's
// storage (activation and gradient), so gradient bookkeeping is per storage root.
//
// The gradient rule: a root value read by several (node, input) slots gets the sum of their
// contributions. The first contribution in backward order writes the gradient buffer
// directly (=); each later one writes a scratch buffer that is then added in (y += x).
// Parameters read by several nodes follow the same rule for their gradients.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace ic {

// One input slot of one node: node.inputs[slot] or node.params[slot].
struct GradSlot {
  NodeId node = kNone;
  int slot = 0;
};

struct AutodiffPlan {
  std::vector<ValueId> storage_root;  // per value: itself, or the value a Reshape aliases
  std::vector<bool> needs_grad;       // per value
  std::vector<bool> runs_backward;    // per node (Reshape nodes never run: they alias)
  // per root value (indexed by ValueId; empty for non-roots): slots contributing to its
  // gradient, in backward order. [0] writes the buffer, the rest go through scratch.
  std::vector<std::vector<GradSlot>> value_grad_writers;
  // per ParamId (trainable only): node.params slots writing its gradient, in backward order.
  // Empty for a trainable parameter no loss depends on: its gradient is zero.
  std::vector<std::vector<GradSlot>> param_grad_writers;
};

// Storage roots only (no gradient analysis); what inference graphs need.
std::vector<ValueId> storage_roots(const Graph& graph);

// For a training graph. Loss roots are graph.losses; they get no gradient buffer (each
// SoftmaxCrossEntropy backward takes its own output gradient as 1).
AutodiffPlan plan_autodiff(const Graph& graph);

bool is_alias_node(const Node& node);  // Reshape: no kernel, output aliases input

}  // namespace ic
