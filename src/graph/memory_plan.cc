#include "graph/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace ic {

namespace {

size_t align_up(size_t bytes, size_t alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

// First and last step of a lifetime, for cheap rejection before the exact test.
LiveInterval hull(const BufferRequest& request) {
  LiveInterval h{INT32_MAX, INT32_MIN};
  for (const LiveInterval& i : request.live) {
    h.first = std::min(h.first, i.first);
    h.last = std::max(h.last, i.last);
  }
  return h;
}

}  // namespace

bool lifetimes_intersect(const BufferRequest& a, const BufferRequest& b) {
  for (const LiveInterval& x : a.live)
    for (const LiveInterval& y : b.live)
      if (x.first <= y.last && y.first <= x.last) return true;
  return false;
}

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment) {
  MemoryPlan plan;
  const size_t count = requests.size();
  plan.offset.assign(count, 0);
  std::vector<size_t> size(count);
  std::vector<LiveInterval> hulls(count);
  for (size_t i = 0; i < count; ++i) {
    size[i] = align_up(requests[i].bytes, alignment);
    hulls[i] = hull(requests[i]);
    plan.naive_bytes += size[i];
  }

  // The lower bound: live bytes per step (a buffer counts once per step it is live).
  int32_t last_step = 0;
  for (size_t i = 0; i < count; ++i)
    if (size[i] > 0) last_step = std::max(last_step, hulls[i].last);
  std::vector<size_t> live_at(static_cast<size_t>(last_step) + 2, 0);
  for (size_t i = 0; i < count; ++i) {
    if (size[i] == 0) continue;
    for (int32_t step = hulls[i].first; step <= hulls[i].last; ++step) {
      const bool live =
          std::any_of(requests[i].live.begin(), requests[i].live.end(),
                      [step](const LiveInterval& l) { return l.first <= step && step <= l.last; });
      if (live) live_at[static_cast<size_t>(step)] += size[i];
    }
  }
  plan.peak_live_bytes = *std::max_element(live_at.begin(), live_at.end());

  // Largest first; ties broken by earlier start, then by index, so the plan is deterministic.
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (size[a] != size[b]) return size[a] > size[b];
    return hulls[a].first < hulls[b].first;
  });

  std::vector<size_t> placed;  // indices, in placement order
  placed.reserve(count);
  std::vector<size_t> conflicts;  // placed buffers live together with the current one
  conflicts.reserve(count);
  for (size_t index : order) {
    if (size[index] == 0) continue;
    conflicts.clear();
    for (size_t other : placed) {
      if (hulls[other].first > hulls[index].last || hulls[index].first > hulls[other].last)
        continue;
      if (lifetimes_intersect(requests[index], requests[other])) conflicts.push_back(other);
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [&](size_t a, size_t b) { return plan.offset[a] < plan.offset[b]; });

    // Walk the conflicting buffers by offset; each gap between the end of what is placed so
    // far and the next buffer's start is a candidate. Best fit: the smallest gap that holds
    // the buffer; none fits: after the highest conflicting buffer.
    size_t best_offset = 0, best_gap = SIZE_MAX, cursor = 0;
    for (size_t other : conflicts) {
      const size_t start = plan.offset[other];
      if (start > cursor) {
        const size_t gap = start - cursor;
        if (gap >= size[index] && gap < best_gap) {
          best_gap = gap;
          best_offset = cursor;
        }
      }
      cursor = std::max(cursor, start + size[other]);
    }
    if (best_gap == SIZE_MAX) best_offset = cursor;
    plan.offset[index] = best_offset;
    plan.arena_bytes = std::max(plan.arena_bytes, best_offset + size[index]);
    placed.push_back(index);
  }
  return plan;
}

}  // namespace ic
