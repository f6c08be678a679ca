#include "backend/cpu/vector_loops.h"

#include <bit>

#include "core/tensor.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IC_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define IC_SANITIZED 1
#endif

// Clones by instruction set, not by "arch=": the loader picks an "arch=skylake-avx512" clone
// only on that very CPU model (GCC's resolver compares the model, not the features), so every
// later AVX-512 CPU (Ice Lake, Sapphire Rapids, Zen 4 and 5) ran the SSE2 default.
#if defined(__x86_64__) && !defined(IC_SANITIZED)
#define IC_FOR_EACH_X86_LEVEL __attribute__((target_clones("avx512f", "avx2", "default")))
#else
// Elsewhere, and under the sanitizers (whose runtime does not resolve ifuncs early enough), one
// version.
#define IC_FOR_EACH_X86_LEVEL
#endif

namespace ic::cpu {

IC_FOR_EACH_X86_LEVEL
void relu_f32(const float* x, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] < 0.f ? 0.f : x[i];
}

IC_FOR_EACH_X86_LEVEL
void relu_bf16(const uint16_t* x, uint16_t* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = std::bit_cast<float>(static_cast<uint32_t>(x[i]) << 16);
    y[i] = v < 0.f ? uint16_t{0} : x[i];
  }
}

IC_FOR_EACH_X86_LEVEL
void masked_grad_f32(const float* v, const float* dy, float* dx, int64_t count, float lo,
                     float hi) {
  for (int64_t i = 0; i < count; ++i) {
    const float g = dy[i];  // loaded whatever the mask, so that the loop vectorizes
    dx[i] = (v[i] > lo) & (v[i] <= hi) ? g : 0.f;
  }
}

IC_FOR_EACH_X86_LEVEL
void masked_grad_bf16(const uint16_t* v, const float* dy, float* dx, int64_t count, float lo,
                      float hi) {
  for (int64_t i = 0; i < count; ++i) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(v[i]) << 16);
    const float g = dy[i];
    dx[i] = (x > lo) & (x <= hi) ? g : 0.f;
  }
}

IC_FOR_EACH_X86_LEVEL
void sum_rows_f32(const float* x, int64_t rows, int64_t stride, float* sum, int64_t count) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * stride;
    for (int64_t i = 0; i < count; ++i) sum[i] += row[i];
  }
}

IC_FOR_EACH_X86_LEVEL
void sum_rows_bf16(const uint16_t* x, int64_t rows, int64_t stride, float* sum, int64_t count) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* row = x + r * stride;
    for (int64_t i = 0; i < count; ++i) sum[i] += bf16_to_float(row[i]);
  }
}

IC_FOR_EACH_X86_LEVEL
void multiply_f32(const float* x, const float* s, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] * s[i];
}

IC_FOR_EACH_X86_LEVEL
void multiply_bf16(const uint16_t* x, const uint16_t* s, uint16_t* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = float_to_bf16(bf16_to_float(x[i]) * bf16_to_float(s[i]));
}

IC_FOR_EACH_X86_LEVEL
void quantize_to_u8(const float* x, uint8_t* y, int64_t count, float inverse_scale, float top) {
  constexpr float kRound = 8388608.f;  // 2^23: adding and subtracting it rounds to nearest even
  for (int64_t i = 0; i < count; ++i) {
    float v = x[i] * inverse_scale;
    v = v > 0.f ? v : 0.f;  // also NaN
    v = v < top ? v : top;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>((v + kRound) - kRound));
  }
}

}  // namespace ic::cpu
