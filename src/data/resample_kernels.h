// The inner loops of the bilinear resampling in preprocessing.cc, in an AVX2+FMA version chosen
// at run time (the build targets plain x86-64) and a portable one. The two differ only by float
// rounding (FMA rounds once). (AVX-512 versions measured slower: its 16-wide gather is.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace ic {

struct ResampleKernels {
  // dst[k] = src[k] as float, k < n.
  void (*widen_row)(const uint8_t* src, size_t n, float* dst);

  // The horizontal lerp over one output row, flat over (column, channel):
  //   dst[k] = row[a[k]] + (row[b[k]] - row[a[k]]) * lerp[k],  k < n.
  void (*lerp_gathered)(const float* row, const int32_t* a, const int32_t* b, const float* lerp,
                        size_t n, float* dst);

  // The vertical lerp and the per-pixel affine maps over one output row:
  //   v = (top[k] + (bottom[k] - top[k]) * yl) * in_scale + bias[k]
  //   dst[k] = (clip01 ? clamp(v, 0, 1) : v) * out_scale + out_bias[k],  k < n.
  void (*lerp_rows_affine)(const float* top, const float* bottom, float yl, float in_scale,
                           const float* bias, bool clip01, float out_scale, const float* out_bias,
                           size_t n, float* dst);
};

const ResampleKernels& portable_resample_kernels();
// nullptr where the CPU lacks AVX2 or FMA.
const ResampleKernels* avx2_resample_kernels();
// The fastest this CPU runs.
const ResampleKernels& resample_kernels();

}  // namespace ic
