// The loops of the bf16 depthwise convolution (backend/cpu/depthwise_loops.h) against a
// double-precision reference: exp_approx, the packing of the weights, and whole rows on every
// kernel size, stride and activation the zoo uses plus the ones that take the generic path,
// with channel counts that leave packed blocks of 32, a stored-order block of 16 and single
// channels. The row runs the AVX-512 loops where the CPU has them, else the scalar ones (which
// also do the channels that fill no vector).
//
// The bound: the inputs are bf16 values, read exactly; the weights and bias are float, used
// exactly; sums in float; one rounding of y to bf16: |y - ref| <= 2^-8 |ref| + 2^-20 sum |w x|
// (float sums) + 1e-5 (exp_approx and the reciprocal's estimate, on values near 1).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/depthwise_loops.h"
#include "core/tensor.h"

namespace ic::cpu {
namespace {

TEST(CpuDepthwiseLoops, ExpApproxIsWithinFourMillionthsOfExp) {
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 0.0137) {
    const double want = std::exp(static_cast<double>(static_cast<float>(x)));
    const double got = exp_approx(static_cast<float>(x));
    worst = std::max(worst, std::abs(got - want) / want);
  }
  EXPECT_LT(worst, 4e-6);
  EXPECT_FLOAT_EQ(exp_approx(-1000.f), exp_approx(-87.f)) << "clamped below";
  EXPECT_FLOAT_EQ(exp_approx(1000.f), exp_approx(88.f)) << "clamped above";
  EXPECT_TRUE(std::isnan(exp_approx(std::numeric_limits<float>::quiet_NaN())));
}

TEST(CpuDepthwiseLoops, PackingSplitsEachBlockOf32IntoEvenAndOddChannels) {
  for (int64_t channels : {8, 32, 48, 80}) {
    SCOPED_TRACE(channels);
    const int64_t taps = 3;
    std::vector<float> natural(size_t(taps * channels)), packed(natural.size(), -1.f);
    for (size_t i = 0; i < natural.size(); ++i) natural[i] = float(i);
    pack_depthwise(natural.data(), taps, channels, packed.data());
    const int64_t whole = channels / 32 * 32;
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t block = c / 32 * 32, i = c % 32;
        const int64_t at = c < whole ? block + (i % 2) * 16 + i / 2 : c;
        EXPECT_EQ(packed[size_t(t * channels + at)], natural[size_t(t * channels + c)])
            << "tap " << t << " channel " << c;
      }
  }
}

struct RowCase {
  int64_t h, w, channels;
  int kernel_h, kernel_w, stride, pad_top, pad_left;
};

double activation(double v, DepthwiseActivation act) {
  switch (act) {
    case DepthwiseActivation::none: return v;
    case DepthwiseActivation::relu: return std::max(v, 0.0);
    case DepthwiseActivation::relu6: return std::min(std::max(v, 0.0), 6.0);
    case DepthwiseActivation::sigmoid: return 1.0 / (1.0 + std::exp(-v));
    case DepthwiseActivation::swish: return v / (1.0 + std::exp(-v));
  }
  return v;
}

const char* name(DepthwiseActivation act) {
  constexpr const char* names[] = {"none", "relu", "relu6", "sigmoid", "swish"};
  return names[static_cast<int>(act)];
}

// Every row of one image of `c` through depthwise_row_bf16 against the reference.
void check_rows(const RowCase& c, DepthwiseActivation act, uint32_t seed) {
  const int64_t out_h = (c.h + 2 * c.pad_top - c.kernel_h) / c.stride + 1;
  const int64_t out_w = (c.w + 2 * c.pad_left - c.kernel_w) / c.stride + 1;
  ASSERT_GT(out_h, 0);
  ASSERT_GT(out_w, 0);
  const DepthwiseGeometry g{c.h,        c.w,      c.channels, out_w,     c.kernel_h,
                            c.kernel_w, c.stride, c.stride,   c.pad_top, c.pad_left};
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uniform(-4.f, 4.f);
  std::vector<uint16_t> x(size_t(c.h * c.w * c.channels));
  for (uint16_t& v : x) v = float_to_bf16(uniform(gen));
  const int64_t taps = int64_t{c.kernel_h} * c.kernel_w;
  std::vector<float> w(size_t(taps * c.channels)), bias(size_t(c.channels));
  for (float& v : w) v = uniform(gen) / 4;
  for (float& v : bias) v = uniform(gen) / 4;
  std::vector<float> packed_w(w.size()), packed_bias(bias.size());
  pack_depthwise(w.data(), taps, c.channels, packed_w.data());
  pack_depthwise(bias.data(), 1, c.channels, packed_bias.data());
  // A guard past the row: the loops must write exactly out_w * channels values.
  std::vector<uint16_t> y(size_t(out_w * c.channels) + 8, 0xabcd);
  int reported = 0;
  for (int64_t oh = 0; oh < out_h; ++oh) {
    depthwise_row_bf16(x.data(), packed_w.data(), packed_bias.data(), g, oh, act, y.data());
    for (size_t i = size_t(out_w * c.channels); i < y.size(); ++i) ASSERT_EQ(y[i], 0xabcd);
    for (int64_t ow = 0; ow < out_w; ++ow)
      for (int64_t ch = 0; ch < c.channels; ++ch) {
        double sum = bias[size_t(ch)], magnitude = std::abs(sum);
        for (int kh = 0; kh < c.kernel_h; ++kh)
          for (int kw = 0; kw < c.kernel_w; ++kw) {
            const int64_t ih = oh * c.stride - c.pad_top + kh, iw = ow * c.stride - c.pad_left + kw;
            if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
            const double term =
                double(bf16_to_float(x[size_t((ih * c.w + iw) * c.channels + ch)])) *
                w[size_t((kh * c.kernel_w + kw) * c.channels + ch)];
            sum += term;
            magnitude += std::abs(term);
          }
        const double want = activation(sum, act);
        const double got = bf16_to_float(y[size_t(ow * c.channels + ch)]);
        const double bound = std::abs(want) / 256 + magnitude * 0x1p-20 + 1e-5;
        if (!(std::abs(got - want) <= bound) && reported++ < 5)
          ADD_FAILURE() << name(act) << " row " << oh << " pixel " << ow << " channel " << ch
                        << ": got " << got << ", expected " << want;
      }
  }
}

TEST(CpuDepthwiseLoops, RowsMatchTheReference) {
  const RowCase cases[] = {
      {9, 11, 48, 3, 3, 1, 1, 1},    // 3x3 stride 1: a packed block and a block of 16
      {10, 12, 40, 3, 3, 2, 0, 0},   // 3x3 stride 2, no padding before (TF's SAME on even sizes)
      {9, 9, 37, 3, 3, 2, 1, 1},     // stride 2 with padding; 32 packed + 5 single channels
      {14, 14, 64, 5, 5, 1, 2, 2},   // 5x5 stride 1 (EfficientNet)
      {11, 13, 144, 5, 5, 2, 1, 2},  // 5x5 stride 2; 4 packed blocks + 16
      {7, 7, 24, 5, 5, 1, 2, 2},     // a map hardly wider than the kernel
      {1, 1, 32, 3, 3, 1, 1, 1},     // one pixel: only the centre tap is inside
      {2, 9, 8, 3, 3, 1, 1, 1},      // fewer channels than a vector
      {8, 10, 32, 7, 7, 1, 3, 3},    // 7x7: the generic path, groups of 4 pixels inside
      {6, 9, 48, 3, 5, 1, 1, 2},     // a kernel that is not square: the generic path
  };
  uint32_t seed = 10;
  for (const RowCase& c : cases) {
    SCOPED_TRACE(std::to_string(c.h) + "x" + std::to_string(c.w) + "x" +
                 std::to_string(c.channels) + " kernel " + std::to_string(c.kernel_h) + "x" +
                 std::to_string(c.kernel_w) + " stride " + std::to_string(c.stride));
    for (DepthwiseActivation act :
         {DepthwiseActivation::none, DepthwiseActivation::relu, DepthwiseActivation::relu6,
          DepthwiseActivation::sigmoid, DepthwiseActivation::swish})
      check_rows(c, act, ++seed);
  }
}

// A NaN in the input stays NaN through the sums and every activation, and rounds to a NaN.
TEST(CpuDepthwiseLoops, NaNStaysNaN) {
  const DepthwiseGeometry g{3, 6, 48, 6, 3, 3, 1, 1, 1, 1};
  std::vector<uint16_t> x(size_t(3 * 6 * 48), float_to_bf16(0.5f));
  x[size_t((1 * 6 + 2) * 48 + 33)] = float_to_bf16(std::numeric_limits<float>::quiet_NaN());
  std::vector<float> w(size_t(9 * 48), 0.25f), bias(48, 0.f);
  for (DepthwiseActivation act :
       {DepthwiseActivation::none, DepthwiseActivation::relu, DepthwiseActivation::relu6,
        DepthwiseActivation::sigmoid, DepthwiseActivation::swish}) {
    std::vector<uint16_t> y(size_t(6 * 48));
    depthwise_row_bf16(x.data(), w.data(), bias.data(), g, 1, act, y.data());
    // Channel 33 of pixels 1 to 3 reads the NaN; its neighbours do not.
    for (int64_t ow = 1; ow <= 3; ++ow)
      EXPECT_TRUE(std::isnan(bf16_to_float(y[size_t(ow * 48 + 33)]))) << name(act) << " " << ow;
    EXPECT_FALSE(std::isnan(bf16_to_float(y[size_t(2 * 48 + 32)]))) << name(act);
    EXPECT_FALSE(std::isnan(bf16_to_float(y[size_t(5 * 48 + 33)]))) << name(act);
  }
}

}  // namespace
}  // namespace ic::cpu
