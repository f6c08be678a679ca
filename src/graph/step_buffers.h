// Every buffer one compiled step needs, with its lifetime over the step's schedule:
// forward nodes 0..n-1 are steps 0..n-1, then backward of node i is step 2n-1-i.
//
//   activation of a value   from its producer's forward to its last reader: forward
//                           readers, and the backward of readers / the producer whose kernel
//                           says backward reads its inputs / outputs. Images, labels,
//                           logits and losses live the whole step. Reshape outputs share
//                           their input's buffer (its lifetime grows to cover theirs).
//   saved (per node)        forward to backward of the node
//   workspace (per node)    its forward step and its backward step only
//   gradient of a value     from its first writer's backward to its producer's backward
//   scratch (per extra      the backward step of the writing node (then added in)
//   gradient contribution)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "graph/autodiff.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"

namespace ic {

// What the planner needs to know about one compiled kernel.
struct KernelSizes {
  size_t workspace_bytes = 0;
  size_t saved_bytes = 0;
  bool backward_reads_inputs = true;
  bool backward_reads_outputs = true;
};

struct StepBuffers {
  std::vector<BufferRequest> requests;
  int32_t last_step = 0;  // the step's final schedule index
  // Request indices, -1 where there is no buffer.
  std::vector<int32_t> activation;  // per value (aliases share their root's request)
  std::vector<int32_t> gradient;    // per value (aliases share their root's request)
  std::vector<int32_t> saved;       // per node
  std::vector<int32_t> workspace;   // per node
  // Per node, per input / param slot: the scratch request its backward writes that
  // gradient into before it is added to the real gradient; -1 when written directly.
  std::vector<std::vector<int32_t>> input_grad_scratch;
  std::vector<std::vector<int32_t>> param_grad_scratch;
};

// `autodiff` is null for inference graphs (no backward). `kernels` is per node (alias nodes'
// sizes are ignored). Fails when a node reads a value nothing produces.
Result<StepBuffers> plan_step_buffers(const Graph& graph, const AutodiffPlan* autodiff,
                                      const std::vector<ValueId>& storage_root,
                                      const std::vector<KernelSizes>& kernels);

}  // namespace ic
