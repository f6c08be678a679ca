// Hot flat loops compiled three times, for AVX-512, AVX2 and the x86-64 baseline, the best one
// chosen when the program loads (GCC's and clang's target_clones). The project builds for any
// x86-64, so without this the compiler vectorizes these loops for SSE2 only, about a third of
// the speed of AVX-512 for the float -> u8 conversion of quantize_to_u8.
// Each works on [0, count) of its arrays; callers split the work over threads.
#pragma once

#include <cstdint>

namespace ic::cpu {

// y = x < 0 ? 0 : x (a NaN stays NaN, as std::max(x, 0.f) keeps it). y may alias x.
void relu_f32(const float* x, float* y, int64_t count);
// The same on bfloat16 bits (compared as floats).
void relu_bf16(const uint16_t* x, uint16_t* y, int64_t count);
// y = clamp(round_half_even(x * inverse_scale), 0, top); NaN becomes 0 (quantize_kernel.cc).
void quantize_to_u8(const float* x, uint8_t* y, int64_t count, float inverse_scale, float top);

}  // namespace ic::cpu
