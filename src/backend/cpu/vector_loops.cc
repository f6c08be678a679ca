#include "backend/cpu/vector_loops.h"

#include <bit>

#include "backend/cpu/bf16_avx512.h"
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

namespace {

IC_FOR_EACH_X86_LEVEL
void sum_rows_bf16_plain(const uint16_t* x, int64_t rows, int64_t stride, float* sum,
                         int64_t count) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* row = x + r * stride;
    for (int64_t i = 0; i < count; ++i) sum[i] += bf16_to_float(row[i]);
  }
}

IC_FOR_EACH_X86_LEVEL
void multiply_bf16_plain(const uint16_t* x, const uint16_t* s, uint16_t* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = float_to_bf16(bf16_to_float(x[i]) * bf16_to_float(s[i]));
}

IC_FOR_EACH_X86_LEVEL
void add_bf16_plain(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t count, float floor) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = bf16_to_float(a[i]) + bf16_to_float(b[i]);
    y[i] = float_to_bf16(v < floor ? floor : v);
  }
}

#if defined(__x86_64__)
// The bf16 loops above on AVX-512, where GCC vectorizes them poorly (the widening and the
// rounding kept multiply_bf16 at half of memory speed on a 2-core AMX Xeon). The same arithmetic
// in float, so the same results; what fills no vector goes to the plain loops.
IC_AVX512 void sum_rows_bf16_avx512(const uint16_t* x, int64_t rows, int64_t stride, float* sum,
                                    int64_t count) {
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {  // two chains of additions, each in row order
    __m512 low = _mm512_loadu_ps(sum + i), high = _mm512_loadu_ps(sum + i + 16);
    for (int64_t r = 0; r < rows; ++r) {
      low = _mm512_add_ps(low, avx512::load16(x + r * stride + i));
      high = _mm512_add_ps(high, avx512::load16(x + r * stride + i + 16));
    }
    _mm512_storeu_ps(sum + i, low);
    _mm512_storeu_ps(sum + i + 16, high);
  }
  if (i < count) sum_rows_bf16_plain(x + i, rows, stride, sum + i, count - i);
}

IC_AVX512 void multiply_bf16_avx512(const uint16_t* x, const uint16_t* s, uint16_t* y,
                                    int64_t count) {
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m512 x_even, x_odd, s_even, s_odd;
    avx512::load32(x + i, x_even, x_odd);
    avx512::load32(s + i, s_even, s_odd);
    avx512::store32(y + i, _mm512_mul_ps(x_even, s_even), _mm512_mul_ps(x_odd, s_odd));
  }
  if (i < count) multiply_bf16_plain(x + i, s + i, y + i, count - i);
}

IC_AVX512 void add_bf16_avx512(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t count,
                               float floor) {
  const __m512 low = _mm512_set1_ps(floor);
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m512 a_even, a_odd, b_even, b_odd;
    avx512::load32(a + i, a_even, a_odd);
    avx512::load32(b + i, b_even, b_odd);
    // max returns its second operand when either is NaN: the sum, so a NaN stays.
    avx512::store32(y + i, _mm512_max_ps(low, _mm512_add_ps(a_even, b_even)),
                    _mm512_max_ps(low, _mm512_add_ps(a_odd, b_odd)));
  }
  if (i < count) add_bf16_plain(a + i, b + i, y + i, count - i, floor);
}
#endif

}  // namespace

void sum_rows_bf16(const uint16_t* x, int64_t rows, int64_t stride, float* sum, int64_t count) {
#if defined(__x86_64__)
  if (avx512::available()) return sum_rows_bf16_avx512(x, rows, stride, sum, count);
#endif
  sum_rows_bf16_plain(x, rows, stride, sum, count);
}

void multiply_bf16(const uint16_t* x, const uint16_t* s, uint16_t* y, int64_t count) {
#if defined(__x86_64__)
  if (avx512::available()) return multiply_bf16_avx512(x, s, y, count);
#endif
  multiply_bf16_plain(x, s, y, count);
}

void add_bf16(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t count, float floor) {
#if defined(__x86_64__)
  if (avx512::available()) return add_bf16_avx512(a, b, y, count, floor);
#endif
  add_bf16_plain(a, b, y, count, floor);
}

IC_FOR_EACH_X86_LEVEL
void multiply_f32(const float* x, const float* s, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] * s[i];
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
