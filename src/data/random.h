// A small, fast, seedable random generator for the input pipeline. Each record gets its own
// generator seeded from (pipeline seed, stream position), so results do not depend on which
// worker thread happens to process it.
#pragma once

#include <array>
#include <cstdint>

#include "core/mix64.h"

namespace ic {

// xoshiro256** (Blackman & Vigna): 256-bit state, passes BigCrush, a few ns per draw.
class Rng {
 public:
  explicit Rng(uint64_t seed, uint64_t stream = 0) {
    uint64_t s = mix64(seed) ^ mix64(stream + 0x632BE59BD9B4E019ull);
    for (uint64_t& word : state_) word = s = mix64(s);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 24 random bits, like TensorFlow's float draws.
  float uniform_float() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform_float(); }
  // Uniform integer in [0, n) for n > 0 (Lemire's multiply-shift; bias < 2^-32 for our n).
  uint32_t uniform_int(uint32_t n) {
    return static_cast<uint32_t>(((next_u64() >> 32) * static_cast<uint64_t>(n)) >> 32);
  }
  bool coin() { return (next_u64() >> 63) != 0; }

  // The whole generator state, so that a stream can be saved and resumed exactly
  // (data/input_position.h). An all-zero state is xoshiro's one fixed point: never valid.
  using StateWords = std::array<uint64_t, 4>;
  StateWords state() const { return {state_[0], state_[1], state_[2], state_[3]}; }
  void set_state(const StateWords& words) {
    for (size_t i = 0; i < 4; ++i) state_[i] = words[i];
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

}  // namespace ic
