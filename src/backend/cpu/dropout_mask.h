// The dropout mask, a pure function of (seed, element index) so every backend draws the
// same mask and backward recomputes it instead of saving it.
//
//   z = seed + (index + 1) * 0x9E3779B97F4A7C15            (mod 2^64)
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//   z =  z ^ (z >> 31)                                      (splitmix64's output function)
//   keep  <=>  (z >> 40) < threshold,  threshold = (uint32) (keep_prob * 2^24)
//
// i.e. the top 24 bits of splitmix64's index-th output, compared with keep_prob in 24-bit
// fixed point; the multiply by 2^24 is exact in float, so a CUDA kernel reproduces it bit for bit.
#pragma once

#include <cstdint>

namespace ic::cpu {

inline uint32_t dropout_threshold(float keep_prob) {
  if (keep_prob >= 1.f) return uint32_t{1} << 24;
  if (keep_prob <= 0.f) return 0;
  return static_cast<uint32_t>(keep_prob * 16777216.f);
}

inline bool dropout_keep(uint64_t seed, uint64_t index, uint32_t threshold) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return static_cast<uint32_t>(z >> 40) < threshold;
}

}  // namespace ic::cpu
