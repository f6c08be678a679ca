#include "graph/param_layout.h"

namespace ic {

// Offsets are packed tightly (no padding between parameters): the decayed prefix then holds
// exactly the weight-decayed kernels, and every element of an arena belongs to a parameter,
// so flat passes (optimizer, all-reduce, EMA) never touch bytes nobody writes.
ParamLayout ParamLayout::plan(const Graph& graph) {
  ParamLayout layout;
  layout.offset.assign(graph.params.size(), 0);
  for (size_t i = 0; i < graph.params.size(); ++i) {
    const ParamInfo& p = graph.params[i];
    if (!p.trainable || !p.weight_decay) continue;
    layout.offset[i] = layout.trainable_count;
    layout.trainable_count += static_cast<size_t>(p.shape.numel());
  }
  layout.decayed_count = layout.trainable_count;
  for (size_t i = 0; i < graph.params.size(); ++i) {
    const ParamInfo& p = graph.params[i];
    if (!p.trainable || p.weight_decay) continue;
    layout.offset[i] = layout.trainable_count;
    layout.trainable_count += static_cast<size_t>(p.shape.numel());
  }
  for (size_t i = 0; i < graph.params.size(); ++i) {
    const ParamInfo& p = graph.params[i];
    if (p.trainable) continue;
    layout.offset[i] = layout.state_count;
    layout.state_count += static_cast<size_t>(p.shape.numel());
  }
  return layout;
}

}  // namespace ic
