// Each resampling kernel set (portable, and AVX2 where the CPU has it) against plain
// double loops.
#include "data/resample_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "data/random.h"

namespace ic {
namespace {

std::vector<const ResampleKernels*> kernel_sets() {
  std::vector<const ResampleKernels*> sets = {&portable_resample_kernels()};
  if (avx2_resample_kernels() != nullptr) sets.push_back(avx2_resample_kernels());
  return sets;
}

// Lengths around the 8-wide vector loop's edges, and a 299-pixel RGB row.
const size_t kLengths[] = {0, 1, 7, 8, 9, 17, 897};

TEST(ResampleKernels, WidenRowIsExact) {
  Rng rng(1);
  for (const ResampleKernels* kernels : kernel_sets()) {
    for (size_t n : kLengths) {
      std::vector<uint8_t> src(n);
      for (uint8_t& v : src) v = static_cast<uint8_t>(rng.uniform_int(256));
      std::vector<float> dst(n + 1, -7.0f);
      kernels->widen_row(src.data(), n, dst.data());
      for (size_t k = 0; k < n; ++k) ASSERT_EQ(dst[k], src[k]) << "n " << n << " k " << k;
      EXPECT_EQ(dst[n], -7.0f);  // nothing written past n
    }
  }
}

TEST(ResampleKernels, LerpGatheredMatchesReference) {
  Rng rng(2);
  std::vector<float> row(1500);
  for (float& v : row) v = rng.uniform(0.0f, 255.0f);
  for (const ResampleKernels* kernels : kernel_sets()) {
    for (size_t n : kLengths) {
      std::vector<int32_t> a(n), b(n);
      std::vector<float> lerp(n), dst(n + 1, -7.0f);
      for (size_t k = 0; k < n; ++k) {
        a[k] = static_cast<int32_t>(rng.uniform_int(1500));
        b[k] = static_cast<int32_t>(rng.uniform_int(1500));
        lerp[k] = rng.uniform_float();
      }
      kernels->lerp_gathered(row.data(), a.data(), b.data(), lerp.data(), n, dst.data());
      for (size_t k = 0; k < n; ++k) {
        const double expected = row[a[k]] + (double{row[b[k]]} - row[a[k]]) * lerp[k];
        ASSERT_NEAR(dst[k], expected, 1e-4) << "n " << n << " k " << k;
      }
      EXPECT_EQ(dst[n], -7.0f);
    }
  }
}

TEST(ResampleKernels, LerpRowsAffineMatchesReferenceWithAndWithoutClip) {
  Rng rng(3);
  for (const ResampleKernels* kernels : kernel_sets()) {
    for (bool clip : {false, true}) {
      for (size_t n : kLengths) {
        std::vector<float> top(n), bottom(n), bias(n), out_bias(n), dst(n + 1, -7.0f);
        for (size_t k = 0; k < n; ++k) {
          top[k] = rng.uniform(0.0f, 255.0f);
          bottom[k] = rng.uniform(0.0f, 255.0f);
          bias[k] = rng.uniform(-0.3f, 0.3f);  // pushes some values outside [0, 1]
          out_bias[k] = rng.uniform(-1.0f, 1.0f);
        }
        const float yl = rng.uniform_float();
        kernels->lerp_rows_affine(top.data(), bottom.data(), yl, 1.0f / 255, bias.data(), clip,
                                  2.0f, out_bias.data(), n, dst.data());
        for (size_t k = 0; k < n; ++k) {
          double v = (top[k] + (double{bottom[k]} - top[k]) * yl) / 255 + bias[k];
          if (clip) v = std::clamp(v, 0.0, 1.0);
          ASSERT_NEAR(dst[k], v * 2 + out_bias[k], 1e-5) << "n " << n << " k " << k;
        }
        EXPECT_EQ(dst[n], -7.0f);
      }
    }
  }
}

}  // namespace
}  // namespace ic
