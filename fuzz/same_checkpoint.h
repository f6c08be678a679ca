// The round-trip property of the checkpoint harnesses: what was read, written back and read
// again must hold the same metadata and tensors (names, dtypes, shapes, bytes).
#pragma once

#include <cstdlib>

#include "io/checkpoint_contents.h"

namespace ic::fuzz {

inline void abort_unless_same(const CheckpointContents& first, const CheckpointContents& again) {
  if (again.metadata != first.metadata || again.tensors.size() != first.tensors.size()) {
    std::abort();
  }
  for (const TensorEntry& t : first.tensors) {
    const TensorEntry* u = again.find(t.name);
    if (u == nullptr || u->bytes != t.bytes || u->dtype != t.dtype ||
        u->shape.dims() != t.shape.dims()) {
      std::abort();
    }
  }
}

}  // namespace ic::fuzz
