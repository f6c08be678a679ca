// A Graph made ready to run on one Backend: gradients derived from per-op backward rules,
// BN+ReLU fused where the backend can, activation memory planned by liveness into one arena,
// one kernel compiled per op and bound to fixed pointers. forward()/backward() allocate
// nothing and look nothing up by name.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "graph/graph.h"
#include "graph/param_layout.h"

namespace ic {

class CompiledGraph {
 public:
  // Before the activation arena is allocated, its planned size plus `keep_free_bytes` (memory
  // the caller will still need, e.g. host copies of the model state for checkpoints) is checked
  // against the backend's available memory: a batch that cannot fit is refused with the figures
  // and the largest batch that would, rather than failing or being killed mid-run.
  static Result<std::unique_ptr<CompiledGraph>> compile(const Graph& graph, Backend& backend,
                                                        const ParamLayout& layout,
                                                        const ParamBinding& binding,
                                                        size_t keep_free_bytes = 0);
  virtual ~CompiledGraph() = default;

  // Device buffers the caller fills before forward(): images [N,H,W,3] f32, labels [N] i32
  // (label < 0 marks a padding row). labels() is null for graphs without a loss.
  virtual float* images() = 0;
  virtual int32_t* labels() = 0;

  virtual void forward(const StepContext& ctx) = 0;
  // forward(), calling `before(node_name, inputs)` before each kernel runs: `inputs` are the
  // node's inputs' device pointers, valid until its kernel runs (the memory plan reuses them
  // later). For calibration, which must see every intermediate value; aliasing nodes (reshape)
  // are not reported.
  using NodeObserver =
      std::function<void(const std::string& node_name, const std::vector<const void*>& inputs)>;
  virtual void forward_observing(const StepContext& ctx, const NodeObserver& before) = 0;
  // Training graphs: writes every trainable parameter's gradient into binding.grads (=).
  virtual void backward(const StepContext& ctx) = 0;

  // Device pointers valid after forward(): logits [N,num_classes], and one scalar per loss
  // term of graph.losses (each already weighted), in that order.
  virtual const float* logits() const = 0;
  virtual std::vector<const float*> loss_terms() const = 0;

  virtual size_t activation_bytes() const = 0;  // the planned activation arena
  // One line for logs: kernels, fusions, the arena size and the size without reuse.
  virtual std::string summary() const { return {}; }
};

}  // namespace ic
