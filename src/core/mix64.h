// SplitMix64's output function over x + the golden-ratio increment: a fast, well-mixed 64-bit
// hash that turns nearby (seed, index) pairs into independent generator seeds. The one copy
// for the whole project; the dropout mask (backend/cpu/dropout_mask.h) spells the same
// arithmetic out so that the CUDA kernel can match it bit for bit.
#pragma once

#include <cstdint>

namespace ic {

inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace ic
