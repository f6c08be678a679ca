// bfloat16 <-> float on AVX-512 vectors, for the loops that read and write bf16 activations
// (depthwise_loops.cc, vector_loops.cc). Each caller checks avx512::available() first and keeps
// a plain loop for other CPUs. The files that include this build outside the unity batches with
// GCC's uninitialized-value warnings off: GCC 12 warns inside its own intrinsics
// (src/CMakeLists.txt).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#define IC_AVX512 __attribute__((target("avx512f")))
#define IC_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

namespace ic::cpu::avx512 {

inline bool available() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// float_to_bf16 (core/tensor.h) on 16 lanes, the result in each lane's upper 16 bits: rounded to
// nearest even; a NaN becomes a quiet NaN.
IC_AVX512_INLINE __m512i round_to_bf16(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(rounded, nan, bits, _mm512_set1_epi32(0x400000));
}

// 16 bf16 values, widened in order.
IC_AVX512_INLINE __m512 load16(const uint16_t* p) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}

IC_AVX512_INLINE void store16(uint16_t* p, __m512 v) {
  const __m512i high = _mm512_srli_epi32(round_to_bf16(v), 16);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(high));
}

// 32 bf16 values as two float vectors: the even elements and the odd ones. A 32-bit lane holds
// an even element in its low half and the next odd one in its high half, so one instruction
// widens each half (a shift, a mask), against two (a widening shuffle and a shift) for every 16
// values in order. Elementwise loops take both halves alike; store32 puts them back in order.
IC_AVX512_INLINE void load32(const uint16_t* p, __m512& even, __m512& odd) {
  const __m512i raw = _mm512_loadu_si512(p);
  even = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
  odd = _mm512_castsi512_ps(_mm512_and_si512(raw, _mm512_set1_epi32(int(0xffff0000u))));
}

IC_AVX512_INLINE void store32(uint16_t* p, __m512 even, __m512 odd) {
  const __m512i low = _mm512_srli_epi32(round_to_bf16(even), 16);
  const __m512i high = _mm512_and_si512(round_to_bf16(odd), _mm512_set1_epi32(int(0xffff0000u)));
  _mm512_storeu_si512(p, _mm512_or_si512(low, high));
}

}  // namespace ic::cpu::avx512
#endif
