// Where each parameter lives. Trainable parameters share one float32 arena, with the
// weight-decayed kernels first (so weight decay is one axpy over a prefix); moving
// statistics share another. Gradients, optimizer slots and EMA shadows are arenas of the
// same layout, so the optimizer, the EMA, the all-reduce and the checkpoint are each one
// flat pass.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/graph.h"

namespace ic {

struct ParamLayout {
  std::vector<size_t> offset;  // per ParamId: element offset in its arena (trainable or state)
  size_t trainable_count = 0;  // elements in the trainable arena
  size_t decayed_count = 0;    // the first decayed_count trainable elements take weight decay
  size_t state_count = 0;      // elements in the state (moving statistics) arena

  static ParamLayout plan(const Graph& graph);
};

// Device pointers a compiled graph reads its parameters from and writes gradients to.
struct ParamBinding {
  const float* weights = nullptr;  // trainable arena (or its EMA shadow, for evaluation)
  float* state = nullptr;          // moving statistics (updated by training graphs)
  float* grads = nullptr;          // training graphs only: same layout as weights
};

}  // namespace ic
