// Liveness-based placement of every buffer a compiled step uses (activations, saved
// tensors, workspaces, gradients, scratch) into ONE arena. Each buffer says at which
// schedule steps it must hold its bytes; two buffers whose steps intersect never share
// bytes. Placement is greedy by size, best fit among the gaps left by the buffers already
// placed that are live at the same time (TFLite's arena planner does the same).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ic {

// Inclusive range of schedule steps [first, last].
struct LiveInterval {
  int32_t first = 0;
  int32_t last = 0;
};

struct BufferRequest {
  std::string name;  // for error messages and the plan summary
  size_t bytes = 0;
  // Steps at which the buffer's bytes matter. A workspace used by a node's forward and
  // backward has two intervals: other buffers may use its bytes in between.
  std::vector<LiveInterval> live;
};

struct MemoryPlan {
  std::vector<size_t> offset;  // per request, bytes from the arena start (aligned)
  size_t arena_bytes = 0;      // the arena to allocate
  size_t naive_bytes = 0;      // sum of all aligned sizes: the arena without reuse
  size_t peak_live_bytes = 0;  // most aligned bytes live at one step: no plan does better
};

// True when some step belongs to both buffers' lifetimes.
bool lifetimes_intersect(const BufferRequest& a, const BufferRequest& b);

// Places every request; zero-byte requests get offset 0 and occupy nothing.
// `alignment` must be a power of two.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = 64);

}  // namespace ic
