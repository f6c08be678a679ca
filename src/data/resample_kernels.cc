#include "data/resample_kernels.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define IC_HAVE_X86 1
#endif

namespace ic {
namespace {

// ---- Scalar loops: the portable versions' tails, and inlined as the AVX2 versions' tails (so
// that those stay in VEX code: calling SSE code with dirty upper halves costs a transition) ----

#define IC_INLINE __attribute__((always_inline)) inline

IC_INLINE void widen_scalar(const uint8_t* __restrict src, size_t n, float* __restrict dst) {
  for (size_t k = 0; k < n; ++k) dst[k] = src[k];
}

IC_INLINE void lerp_gathered_scalar(const float* __restrict row, const int32_t* __restrict a,
                                    const int32_t* __restrict b, const float* __restrict lerp,
                                    size_t n, float* __restrict dst) {
  for (size_t k = 0; k < n; ++k) {
    const float left = row[a[k]];
    dst[k] = left + (row[b[k]] - left) * lerp[k];
  }
}

IC_INLINE void lerp_rows_affine_scalar(const float* __restrict top, const float* __restrict bottom,
                                       float yl, float in_scale, const float* __restrict bias,
                                       bool clip01, float out_scale,
                                       const float* __restrict out_bias, size_t n,
                                       float* __restrict dst) {
  for (size_t k = 0; k < n; ++k) {
    float v = (top[k] + (bottom[k] - top[k]) * yl) * in_scale + bias[k];
    if (clip01) v = std::min(std::max(v, 0.0f), 1.0f);
    dst[k] = v * out_scale + out_bias[k];
  }
}

// ---- Portable versions (SSE2 where GCC will not vectorise on its own) ----

void widen_row_portable(const uint8_t* src, size_t n, float* dst) { widen_scalar(src, n, dst); }

void lerp_gathered_portable(const float* row, const int32_t* a, const int32_t* b, const float* lerp,
                            size_t n, float* dst) {
  lerp_gathered_scalar(row, a, b, lerp, n, dst);
}

void lerp_rows_affine_portable(const float* top, const float* bottom, float yl, float in_scale,
                               const float* bias, bool clip01, float out_scale,
                               const float* out_bias, size_t n, float* dst) {
  size_t k = 0;
#if defined(__SSE2__)
  // GCC will not vectorise the clamp (NaN semantics of min/max), so spell it out.
  const __m128 vyl = _mm_set1_ps(yl), vin = _mm_set1_ps(in_scale), vout = _mm_set1_ps(out_scale);
  const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f);
  for (; k + 4 <= n; k += 4) {
    const __m128 t = _mm_loadu_ps(top + k);
    const __m128 lerped = _mm_add_ps(t, _mm_mul_ps(_mm_sub_ps(_mm_loadu_ps(bottom + k), t), vyl));
    __m128 v = _mm_add_ps(_mm_mul_ps(lerped, vin), _mm_loadu_ps(bias + k));
    if (clip01) v = _mm_min_ps(_mm_max_ps(v, zero), one);
    _mm_storeu_ps(dst + k, _mm_add_ps(_mm_mul_ps(v, vout), _mm_loadu_ps(out_bias + k)));
  }
#endif
  lerp_rows_affine_scalar(top + k, bottom + k, yl, in_scale, bias + k, clip01, out_scale,
                          out_bias + k, n - k, dst + k);
}

// ---- AVX2 + FMA versions: 8 floats at a time, the remainder with the scalar loops ----

#if defined(IC_HAVE_X86)
#define IC_AVX2 __attribute__((target("avx2,fma")))

IC_AVX2 void widen_row_avx2(const uint8_t* src, size_t n, float* dst) {
  size_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + k));
    _mm256_storeu_ps(dst + k, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)));
  }
  widen_scalar(src + k, n - k, dst + k);
}

IC_AVX2 void lerp_gathered_avx2(const float* row, const int32_t* a, const int32_t* b,
                                const float* lerp, size_t n, float* dst) {
  size_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256 left =
        _mm256_i32gather_ps(row, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + k)), 4);
    const __m256 right =
        _mm256_i32gather_ps(row, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k)), 4);
    _mm256_storeu_ps(dst + k,
                     _mm256_fmadd_ps(_mm256_sub_ps(right, left), _mm256_loadu_ps(lerp + k), left));
  }
  lerp_gathered_scalar(row, a + k, b + k, lerp + k, n - k, dst + k);
}

IC_AVX2 void lerp_rows_affine_avx2(const float* top, const float* bottom, float yl, float in_scale,
                                   const float* bias, bool clip01, float out_scale,
                                   const float* out_bias, size_t n, float* dst) {
  const __m256 vyl = _mm256_set1_ps(yl), vin = _mm256_set1_ps(in_scale);
  const __m256 vout = _mm256_set1_ps(out_scale);
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  size_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256 t = _mm256_loadu_ps(top + k);
    const __m256 lerped = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(bottom + k), t), vyl, t);
    __m256 v = _mm256_fmadd_ps(lerped, vin, _mm256_loadu_ps(bias + k));
    if (clip01) v = _mm256_min_ps(_mm256_max_ps(v, zero), one);
    _mm256_storeu_ps(dst + k, _mm256_fmadd_ps(v, vout, _mm256_loadu_ps(out_bias + k)));
  }
  lerp_rows_affine_scalar(top + k, bottom + k, yl, in_scale, bias + k, clip01, out_scale,
                          out_bias + k, n - k, dst + k);
}

bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

}  // namespace

const ResampleKernels& portable_resample_kernels() {
  static const ResampleKernels kernels{widen_row_portable, lerp_gathered_portable,
                                       lerp_rows_affine_portable};
  return kernels;
}

const ResampleKernels* avx2_resample_kernels() {
#if defined(IC_HAVE_X86)
  static const ResampleKernels kernels{widen_row_avx2, lerp_gathered_avx2, lerp_rows_affine_avx2};
  static const bool supported = cpu_has_avx2_fma();
  return supported ? &kernels : nullptr;
#else
  return nullptr;
#endif
}

const ResampleKernels& resample_kernels() {
  static const ResampleKernels& best =
      avx2_resample_kernels() != nullptr ? *avx2_resample_kernels() : portable_resample_kernels();
  return best;
}

}  // namespace ic
