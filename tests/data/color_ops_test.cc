#include "data/color_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace ic {
namespace {

using Pixel = std::array<double, 3>;

// Saturation scaling in closed form, in double, derived independently of the HSV formulas:
// at fixed hue and value v = max, every channel's distance from v is proportional to the chroma
// s * v, so scaling s by f' moves each channel to v - f' * (v - x). With s = (v - min) / v the
// clip of s * f to [0, 1] makes f' = min(f, v / (v - min)); for v <= 0 the kernel's s is 0, so
// every channel becomes v.
Pixel reference_saturation(Pixel p, double factor) {
  const double v = std::max({p[0], p[1], p[2]});
  const double range = v - std::min({p[0], p[1], p[2]});
  if (v <= 0) return {v, v, v};
  const double f = range > 0 ? std::min(factor, v / range) : 0.0;
  Pixel out;
  for (int c = 0; c < 3; ++c) out[c] = v - f * (v - p[c]);
  return out;
}

Pixel apply_kernel(Pixel p, float factor) {
  float rgb[3] = {static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2])};
  adjust_saturation_pixel(rgb, factor);
  return {rgb[0], rgb[1], rgb[2]};
}

// Greys, pure and mixed colours in every hue sector, a saturated colour, a black pixel, and
// values outside [0, 1] as a brightness shift leaves them.
const std::vector<Pixel>& test_pixels() {
  static const std::vector<Pixel> pixels = {
      {0.5, 0.5, 0.5},    {0.0, 0.0, 0.0},     {1.0, 1.0, 1.0},    {1.0, 0.0, 0.0}, {0.0, 1.0, 0.0},
      {0.0, 0.0, 1.0},    {0.9, 0.6, 0.2},     {0.6, 0.9, 0.2},    {0.2, 0.9, 0.6}, {0.2, 0.6, 0.9},
      {0.6, 0.2, 0.9},    {0.9, 0.2, 0.6},     {0.3, 0.25, 0.28},  {1.0, 0.5, 0.0}, {0.7, 0.7, 0.1},
      {1.12, 0.4, -0.05}, {-0.1, -0.03, -0.2}, {0.05, -0.02, 0.3}, {1.1, 1.1, 1.1}, {0.8, 0.4, 0.4},
  };
  return pixels;
}

TEST(AdjustSaturation, MatchesClosedFormReference) {
  for (const double factor : {0.5, 0.73, 1.0, 1.21, 1.5}) {
    for (const Pixel& p : test_pixels()) {
      const Pixel expected = reference_saturation(p, factor);
      const Pixel got = apply_kernel(p, static_cast<float>(factor));
      for (int c = 0; c < 3; ++c) {
        EXPECT_NEAR(got[c], expected[c], 2e-6)
            << "pixel " << p[0] << "," << p[1] << "," << p[2] << " factor " << factor << " c " << c;
      }
    }
  }
}

TEST(AdjustSaturation, KnownValues) {
  // Grey stays grey whatever the factor.
  EXPECT_EQ(apply_kernel({0.5, 0.5, 0.5}, 1.5), (Pixel{0.5, 0.5, 0.5}));
  // s = 0.5, factor 0.5: chroma halves around v = 0.8: (0.8, 0.6, 0.6).
  const Pixel half = apply_kernel({0.8, 0.4, 0.4}, 0.5f);
  EXPECT_NEAR(half[0], 0.8, 1e-6);
  EXPECT_NEAR(half[1], 0.6, 1e-6);
  EXPECT_NEAR(half[2], 0.6, 1e-6);
  // Fully saturated colours cannot gain saturation.
  const Pixel red = apply_kernel({1.0, 0.0, 0.0}, 1.5f);
  EXPECT_NEAR(red[0], 1.0, 1e-6);
  EXPECT_NEAR(red[1], 0.0, 1e-6);
  EXPECT_NEAR(red[2], 0.0, 1e-6);
  // s > 1 (min below 0) is clipped to 1 even at factor 1: the minimum moves to 0.
  const Pixel over = apply_kernel({1.0, 0.5, -0.25}, 1.0f);
  EXPECT_NEAR(over[0], 1.0, 1e-6);
  EXPECT_NEAR(over[1], 0.6, 1e-6);  // 1 - (1 - 0.5) * 1 / 1.25
  EXPECT_NEAR(over[2], 0.0, 1e-6);
}

TEST(SlimColorDistortion, OrderingAndClipMatchReference) {
  const std::vector<Pixel>& pixels = test_pixels();
  for (const int ordering : {0, 1}) {
    for (const float delta : {-0.12f, 0.0f, 0.1f}) {
      for (const float factor : {0.6f, 1.4f}) {
        std::vector<float> data;
        for (const Pixel& p : pixels) {
          for (double v : p) data.push_back(static_cast<float>(std::clamp(v, 0.0, 1.0)));
        }
        std::vector<float> input = data;
        apply_slim_color_distortion(SlimColorDistortion{ordering, delta, factor}, data.data(),
                                    pixels.size());
        for (size_t i = 0; i < pixels.size(); ++i) {
          Pixel p{input[3 * i], input[3 * i + 1], input[3 * i + 2]};
          if (ordering == 0) {
            for (double& v : p) v += delta;
            p = reference_saturation(p, factor);
          } else {
            p = reference_saturation(p, factor);
            for (double& v : p) v += delta;
          }
          for (int c = 0; c < 3; ++c) {
            const double expected = std::clamp(p[c], 0.0, 1.0);
            EXPECT_NEAR(data[3 * i + c], expected, 2e-6)
                << "ordering " << ordering << " delta " << delta << " factor " << factor
                << " pixel " << i << " c " << c;
            EXPECT_GE(data[3 * i + c], 0.0f);
            EXPECT_LE(data[3 * i + c], 1.0f);
          }
        }
      }
    }
  }
}

TEST(SlimColorDistortion, OrderMatters) {
  // A dark colour: brightening first raises v and so lowers s before the scaling; the two
  // orders give different pixels.
  float first[3] = {0.3f, 0.1f, 0.05f}, second[3] = {0.3f, 0.1f, 0.05f};
  apply_slim_color_distortion(SlimColorDistortion{0, 0.1f, 1.5f}, first, 1);
  apply_slim_color_distortion(SlimColorDistortion{1, 0.1f, 1.5f}, second, 1);
  EXPECT_GT(std::abs(first[1] - second[1]) + std::abs(first[2] - second[2]), 0.01f);
}

}  // namespace
}  // namespace ic
