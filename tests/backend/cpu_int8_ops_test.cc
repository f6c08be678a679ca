// int8 convolutions and dense layers (ops.h's Int8Conv) and the Quantize kernel on the CPU
// backend, against integer references written here: plain loops, int32 sums, then the same f32
// rescale. With power-of-two scales and no bias, y = s32 * scale is exact, so the integer part
// is compared bit for bit; arbitrary scales with a bias are compared within 1e-6 of the
// magnitudes summed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::cpu_backend;

// Runs a compiled kernel on host data: u8 x, f32 params; returns y (f32). Every buffer starts
// as NaN bytes, and the workspace is poisoned again before a second forward, which must give
// the same answer (nothing may survive in the workspace).
class Int8Runner {
 public:
  Int8Runner(Backend& backend, const OpDesc& desc) : backend_(backend) {
    auto kernel = backend.compile(desc);
    EXPECT_TRUE(kernel.ok()) << kernel.status().message();
    if (kernel.ok()) kernel_ = std::move(kernel).value();
  }
  OpKernel* kernel() { return kernel_.get(); }

  std::vector<float> run(const std::vector<uint8_t>& x,
                         const std::vector<std::vector<float>>& params, size_t outputs) {
    const std::vector<uint8_t> bytes = run_bytes(x, params, outputs * 4);
    std::vector<float> y(bytes.size() / 4);
    if (!y.empty()) std::memcpy(y.data(), bytes.data(), bytes.size());
    return y;
  }

  // The output as bytes: u8 outputs (a convolution with an output scale).
  std::vector<uint8_t> run_bytes(const std::vector<uint8_t>& x,
                                 const std::vector<std::vector<float>>& params,
                                 size_t output_bytes) {
    return run_bytes(std::vector<std::vector<uint8_t>>{x}, params, output_bytes);
  }
  // Several u8 inputs (a concatenation).
  std::vector<uint8_t> run_bytes(const std::vector<std::vector<uint8_t>>& xs,
                                 const std::vector<std::vector<float>>& params,
                                 size_t output_bytes) {
    if (!kernel_) return {};
    buffers_.clear();
    OpBindings b;
    for (const std::vector<uint8_t>& x : xs) b.inputs.push_back(upload(x.data(), x.size()));
    for (const auto& p : params) b.params.push_back(upload(p.data(), p.size() * 4));
    b.outputs = {alloc(output_bytes)};
    if (kernel_->workspace_bytes()) b.workspace = alloc(kernel_->workspace_bytes());
    const Status bound = kernel_->bind(b);
    EXPECT_TRUE(bound.ok()) << bound.message();
    if (!bound.ok()) return {};
    std::vector<uint8_t> first = forward(b, output_bytes);
    if (b.workspace) poison(b.workspace, kernel_->workspace_bytes());
    poison(b.outputs[0], output_bytes);
    std::vector<uint8_t> second = forward(b, output_bytes);
    EXPECT_EQ(first, second) << "a second forward gave another answer";
    return first;
  }

 private:
  std::vector<uint8_t> forward(const OpBindings& b, size_t bytes) {
    kernel_->forward(StepContext{});
    std::vector<uint8_t> y(bytes);
    backend_.download(y.data(), b.outputs[0], bytes);
    return y;
  }
  void poison(void* p, size_t bytes) {
    const std::vector<uint8_t> nan_bytes(bytes, 0xff);
    backend_.upload(p, nan_bytes.data(), bytes);
  }
  void* alloc(size_t bytes) {
    auto buffer = backend_.allocate(std::max<size_t>(bytes, 64));
    EXPECT_TRUE(buffer.ok());
    buffers_.push_back(std::move(buffer).value());
    poison(buffers_.back().data(), bytes);
    return buffers_.back().data();
  }
  void* upload(const void* data, size_t bytes) {
    void* p = alloc(bytes);
    backend_.upload(p, data, bytes);
    return p;
  }

  Backend& backend_;
  std::unique_ptr<OpKernel> kernel_;
  std::vector<DeviceBuffer> buffers_;
};

std::vector<uint8_t> random_activations(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> level(0, kInt8ActivationMax);
  std::vector<uint8_t> x(static_cast<size_t>(n));
  for (uint8_t& v : x) v = static_cast<uint8_t>(level(gen));
  return x;
}

std::vector<float> random_floats(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(gen);
  return v;
}

// The reference's own quantization of the weights (output channel innermost), as ops.h says.
std::vector<int32_t> reference_weights(const std::vector<float>& w,
                                       const std::vector<float>& scales) {
  std::vector<int32_t> q(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const float level = std::nearbyint(w[i] / scales[i % scales.size()]);
    q[i] = static_cast<int32_t>(std::clamp(level, -127.f, 127.f));
  }
  return q;
}

// y = float(s32) * (input_scale * weight_scales[c]) + bias[c], then ReLU, all in f32; also
// |float(s32) * scale| + |bias| per output, the size a rounding difference is measured by.
struct Rescaled {
  std::vector<float> y, magnitude;
};
Rescaled rescale(const std::vector<int32_t>& sums, const Int8Conv& q,
                 const std::vector<float>* bias, bool relu) {
  const size_t channels = q.weight_scales.size();
  Rescaled out;
  for (size_t i = 0; i < sums.size(); ++i) {
    const size_t c = i % channels;
    const float scaled = static_cast<float>(sums[i]) * (q.input_scale * q.weight_scales[c]);
    const float b = bias ? (*bias)[c] : 0.f;
    float y = scaled + b;
    if (relu) y = std::max(y, 0.f);
    out.y.push_back(y);
    out.magnitude.push_back(std::abs(scaled) + std::abs(b));
  }
  return out;
}

std::vector<int32_t> reference_conv_sums(const Conv2dDesc& d, const std::vector<uint8_t>& x,
                                         const std::vector<int32_t>& q) {
  const Shape in = d.input, out = d.output();
  const Pads pads =
      tf_pads(in.h(), in.w(), d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, d.padding);
  const int64_t ci = in.c(), co = d.out_channels;
  std::vector<int32_t> sums(static_cast<size_t>(out.numel()), 0);
  for (int64_t n = 0; n < out.n(); ++n)
    for (int64_t oh = 0; oh < out.h(); ++oh)
      for (int64_t ow = 0; ow < out.w(); ++ow)
        for (int64_t o = 0; o < co; ++o) {
          int32_t acc = 0;
          for (int64_t kh = 0; kh < d.kernel_h; ++kh)
            for (int64_t kw = 0; kw < d.kernel_w; ++kw) {
              const int64_t ih = oh * d.stride_h + kh - pads.top;
              const int64_t iw = ow * d.stride_w + kw - pads.left;
              if (ih < 0 || iw < 0 || ih >= in.h() || iw >= in.w()) continue;
              for (int64_t c = 0; c < ci; ++c)
                acc += int32_t{x[static_cast<size_t>(((n * in.h() + ih) * in.w() + iw) * ci + c)]} *
                       q[static_cast<size_t>(((kh * d.kernel_w + kw) * ci + c) * co + o)];
            }
          sums[static_cast<size_t>(((n * out.h() + oh) * out.w() + ow) * co + o)] = acc;
        }
  return sums;
}

std::vector<int32_t> reference_dense_sums(const DenseDesc& d, const std::vector<uint8_t>& x,
                                          const std::vector<int32_t>& q) {
  std::vector<int32_t> sums(static_cast<size_t>(d.batch * d.out_features), 0);
  for (int64_t n = 0; n < d.batch; ++n)
    for (int64_t m = 0; m < d.out_features; ++m) {
      int32_t acc = 0;
      for (int64_t k = 0; k < d.in_features; ++k)
        acc += int32_t{x[static_cast<size_t>(n * d.in_features + k)]} *
               q[static_cast<size_t>(k * d.out_features + m)];
      sums[static_cast<size_t>(n * d.out_features + m)] = acc;
    }
  return sums;
}

// Powers of two: every f32 product y = s32 * scale is exact (|s32| < 2^24 here).
Int8Conv power_of_two_scales(int64_t channels) {
  Int8Conv q;
  q.input_scale = 0.125f;
  for (int64_t c = 0; c < channels; ++c)
    q.weight_scales.push_back(std::ldexp(1.f, -6 - static_cast<int>(c % 3)));
  return q;
}

// Non-round scales, as calibration gives.
Int8Conv arbitrary_scales(int64_t channels, uint32_t seed) {
  Int8Conv q;
  q.input_scale = 0.0137f;
  q.weight_scales = random_floats(channels, seed, 0.002f, 0.011f);
  return q;
}

void expect_exact(const std::vector<float>& actual, const std::vector<float>& expected,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    if (actual[i] != expected[i] && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << actual[i] << ", expected " << expected[i];
}

void expect_close(const std::vector<float>& actual, const Rescaled& expected,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.y.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double tolerance = 1e-6 * expected.magnitude[i];
    if (!(std::abs(double{actual[i]} - expected.y[i]) <= tolerance) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << actual[i] << ", expected " << expected.y[i];
  }
}

struct Int8ConvCase {
  Shape input;
  int64_t filters;
  int kh, kw, stride;
  Padding padding;
};

// 1x1, 3x3 stride 1 SAME, 3x3 stride 2 VALID and SAME (TF's asymmetric padding), 1x7 / 7x1;
// odd channel counts (3 -> 5, 35 -> 17), batches 1 and 3.
const Int8ConvCase kConvCases[] = {
    {{1, 6, 5, 35}, 17, 1, 1, 1, Padding::same},  {{3, 7, 5, 3}, 5, 3, 3, 1, Padding::same},
    {{1, 9, 8, 35}, 17, 3, 3, 2, Padding::valid}, {{3, 7, 6, 3}, 5, 3, 3, 2, Padding::valid},
    {{3, 8, 6, 5}, 3, 3, 3, 2, Padding::same},    {{1, 7, 9, 8}, 5, 1, 7, 1, Padding::same},
    {{3, 9, 7, 8}, 5, 7, 1, 1, Padding::same},    {{1, 17, 17, 35}, 17, 3, 3, 1, Padding::same},
};

Conv2dDesc int8_conv(const Int8ConvCase& c, const Int8Conv& q, bool bias, bool relu) {
  Conv2dDesc d = testing::conv_geometry(c.input, c.filters, c.kh, c.kw, c.stride, c.padding);
  d.has_bias = bias;
  d.training = false;
  d.fused_relu = relu;
  d.constant_weights = true;
  d.int8 = q;
  return d;
}

std::string int8_conv_name(const Conv2dDesc& d) {
  return d.input.str() + " -> " + std::to_string(d.out_channels) + " k" +
         std::to_string(d.kernel_h) + "x" + std::to_string(d.kernel_w) + " s" +
         std::to_string(d.stride_h) + (d.padding == Padding::same ? " same" : " valid") +
         (d.has_bias ? " bias" : "") + (d.fused_relu ? " relu" : "");
}

int64_t weight_count(const Conv2dDesc& d) {
  return d.kernel_h * d.kernel_w * d.input.c() * d.out_channels;
}

TEST(CpuInt8Conv, IntegerSumsMatchBitForBit) {
  auto backend = cpu_backend();
  uint32_t seed = 100;
  for (const Int8ConvCase& c : kConvCases)
    for (bool relu : {false, true}) {
      const Conv2dDesc d = int8_conv(c, power_of_two_scales(c.filters), false, relu);
      const auto x = random_activations(d.input.numel(), seed++);
      // Some |w| / scale exceed 127: the clamp is exercised too.
      const auto w = random_floats(weight_count(d), seed++, -2.f, 2.f);
      const auto sums = reference_conv_sums(d, x, reference_weights(w, d.int8->weight_scales));
      Int8Runner runner(*backend, d);
      ASSERT_NE(runner.kernel(), nullptr) << int8_conv_name(d);
      const auto y = runner.run(x, {w}, static_cast<size_t>(d.output().numel()));
      expect_exact(y, rescale(sums, *d.int8, nullptr, relu).y, int8_conv_name(d));
    }
}

TEST(CpuInt8Conv, ArbitraryScalesAndBiasWithinOneInAMillion) {
  auto backend = cpu_backend();
  uint32_t seed = 200;
  for (const Int8ConvCase& c : kConvCases)
    for (bool relu : {false, true}) {
      const Conv2dDesc d = int8_conv(c, arbitrary_scales(c.filters, seed++), true, relu);
      const auto x = random_activations(d.input.numel(), seed++);
      const auto w = random_floats(weight_count(d), seed++, -1.f, 1.f);
      const auto bias = random_floats(c.filters, seed++, -2.f, 2.f);
      const auto sums = reference_conv_sums(d, x, reference_weights(w, d.int8->weight_scales));
      Int8Runner runner(*backend, d);
      ASSERT_NE(runner.kernel(), nullptr) << int8_conv_name(d);
      const auto y = runner.run(x, {w, bias}, static_cast<size_t>(d.output().numel()));
      expect_close(y, rescale(sums, *d.int8, &bias, relu), int8_conv_name(d));
    }
}

// ReLU6, sigmoid and swish post-ops (a MobileNet or EfficientNet layer in int8): the activation
// of the rescaled sums plus bias, within 1e-6 of the magnitudes summed as above.
TEST(CpuInt8Conv, FusedActivationsFollowTheRescaledSums) {
  auto backend = cpu_backend();
  uint32_t seed = 700;
  for (const Int8ConvCase& c : {kConvCases[1], kConvCases[7]})
    for (Activation f : {Activation::relu6, Activation::sigmoid, Activation::swish}) {
      Conv2dDesc d = int8_conv(c, arbitrary_scales(c.filters, seed++), true, false);
      d.fused_activation = f;
      const auto x = random_activations(d.input.numel(), seed++);
      const auto w = random_floats(weight_count(d), seed++, -1.f, 1.f);
      const auto bias = random_floats(c.filters, seed++, -2.f, 2.f);
      const auto sums = reference_conv_sums(d, x, reference_weights(w, d.int8->weight_scales));
      Rescaled want = rescale(sums, *d.int8, &bias, false);
      for (float& v : want.y) v = static_cast<float>(ref::activation_value(f, v));
      Int8Runner runner(*backend, d);
      ASSERT_NE(runner.kernel(), nullptr) << int8_conv_name(d);
      const auto y = runner.run(x, {w, bias}, static_cast<size_t>(d.output().numel()));
      expect_close(y, want, int8_conv_name(d) + " " + activation_name(f));
    }
}

// The extremes: x = 127 everywhere and q = +-127, where a 16-bit pair sum would saturate
// if activations used 8 bits.
TEST(CpuInt8Conv, ExtremeValuesDoNotSaturate) {
  auto backend = cpu_backend();
  const Int8ConvCase c{{1, 5, 5, 64}, 8, 3, 3, 1, Padding::same};
  const Conv2dDesc d = int8_conv(c, power_of_two_scales(c.filters), false, false);
  const std::vector<uint8_t> x(static_cast<size_t>(d.input.numel()), kInt8ActivationMax);
  std::vector<float> w(static_cast<size_t>(weight_count(d)));
  for (size_t i = 0; i < w.size(); ++i) w[i] = (i / 8) % 2 ? 1.f : -1.f;  // far past the clamp
  const auto sums = reference_conv_sums(d, x, reference_weights(w, d.int8->weight_scales));
  Int8Runner runner(*backend, d);
  ASSERT_NE(runner.kernel(), nullptr);
  expect_exact(runner.run(x, {w}, static_cast<size_t>(d.output().numel())),
               rescale(sums, *d.int8, nullptr, false).y, int8_conv_name(d));
}

// Weights at exactly .5 steps round to even; past the range they clamp to +-127.
TEST(CpuInt8Conv, WeightsRoundHalfToEvenAndClamp) {
  auto backend = cpu_backend();
  const std::vector<float> levels{2.5f, 3.5f, -2.5f, -3.5f, 0.5f, 200.f, -200.f, 126.6f};
  const std::vector<float> expected{2.f, 4.f, -2.f, -4.f, 0.f, 127.f, -127.f, 127.f};
  const auto channels = static_cast<int64_t>(levels.size());
  Int8Conv q;
  q.input_scale = 1.f;
  q.weight_scales.assign(levels.size(), 0.25f);
  const Conv2dDesc d = int8_conv({{1, 1, 1, 1}, channels, 1, 1, 1, Padding::same}, q, false, false);
  std::vector<float> w;
  for (float level : levels) w.push_back(level * 0.25f);
  Int8Runner runner(*backend, d);
  ASSERT_NE(runner.kernel(), nullptr);
  const auto y = runner.run({1}, {w}, levels.size());
  std::vector<float> want;
  for (float e : expected) want.push_back(e * 0.25f);
  expect_exact(y, want, "1x1 weights");
}

TEST(CpuInt8Conv, ReportsOneDnnImplementationAndRebindsNewWeights) {
  auto backend = cpu_backend();
  const Int8ConvCase c{{1, 6, 6, 8}, 4, 3, 3, 1, Padding::same};
  const Conv2dDesc d = int8_conv(c, power_of_two_scales(c.filters), false, false);
  Int8Runner runner(*backend, d);
  ASSERT_NE(runner.kernel(), nullptr);
  const std::string impl = runner.kernel()->implementation();
  EXPECT_GT(impl.size(), 5u) << impl;
  EXPECT_EQ(impl.substr(impl.size() - 5), " int8") << impl;
  const auto x = random_activations(d.input.numel(), 7);
  for (uint32_t seed : {8u, 9u}) {  // the second bind's weights are quantized anew
    const auto w = random_floats(weight_count(d), seed, -0.5f, 0.5f);
    const auto sums = reference_conv_sums(d, x, reference_weights(w, d.int8->weight_scales));
    expect_exact(runner.run(x, {w}, static_cast<size_t>(d.output().numel())),
                 rescale(sums, *d.int8, nullptr, false).y, "weights " + std::to_string(seed));
  }
}

// Backend::int8_conv_pays: yes without timing; timed, one answer per layer whatever the batch
// (the first batch size asked settles it, so that an image gets the same arithmetic in any
// batch); only int8 convolutions with float32 output are asked about.
TEST(CpuInt8Conv, WhetherInt8PaysIsSettledPerLayer) {
  auto backend = cpu_backend();
  const Int8ConvCase c{{4, 17, 17, 32}, 48, 3, 3, 1, Padding::same};
  Conv2dDesc d = int8_conv(c, arbitrary_scales(c.filters, 7), true, true);
  Result<bool> untimed = backend->int8_conv_pays(d);
  ASSERT_TRUE(untimed.ok()) << untimed.status().message();
  EXPECT_TRUE(*untimed);
  if (!compile_timing_allowed()) GTEST_SKIP() << "IC_CONV_TIMING=0: timing is off";
  d.time_algorithms = true;
  const Result<bool> at_4 = backend->int8_conv_pays(d);
  ASSERT_TRUE(at_4.ok()) << at_4.status().message();
  for (int64_t batch : {1, 4, 2}) {
    Conv2dDesc other = d;
    other.input[0] = batch;
    const Result<bool> again = backend->int8_conv_pays(other);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(*again, *at_4) << "batch " << batch;
  }
  std::printf("int8 %s on this CPU for %s\n", *at_4 ? "pays" : "does not pay",
              int8_conv_name(d).c_str());

  Conv2dDesc float32 = d;
  float32.int8.reset();
  EXPECT_FALSE(backend->int8_conv_pays(float32).ok());
  Conv2dDesc u8_output = d;
  u8_output.int8->output_scale = 0.1f;
  EXPECT_FALSE(backend->int8_conv_pays(u8_output).ok());
}

TEST(CpuInt8Conv, RefusesTrainingAndBadScales) {
  auto backend = cpu_backend();
  const Int8ConvCase c{{1, 6, 6, 8}, 4, 3, 3, 1, Padding::same};
  Conv2dDesc training = int8_conv(c, power_of_two_scales(4), false, false);
  training.training = true;
  auto refused = backend->compile(training);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::invalid_argument) << refused.status().message();

  const Conv2dDesc too_few = int8_conv(c, power_of_two_scales(3), false, false);
  EXPECT_EQ(backend->compile(too_few).status().code(), StatusCode::invalid_argument);
  Int8Conv negative = power_of_two_scales(4);
  negative.weight_scales[2] = -1.f;
  EXPECT_EQ(backend->compile(int8_conv(c, negative, false, false)).status().code(),
            StatusCode::invalid_argument);
  Int8Conv zero_input = power_of_two_scales(4);
  zero_input.input_scale = 0.f;
  EXPECT_EQ(backend->compile(int8_conv(c, zero_input, false, false)).status().code(),
            StatusCode::invalid_argument);
}

// Quantize's formula (ops.h): clamp(round_half_even(y * (1 / scale)), 0, kInt8ActivationMax).
std::vector<uint8_t> reference_quantize(const std::vector<float>& y, float scale) {
  const float inverse = 1.f / scale;
  std::vector<uint8_t> q;
  for (float v : y) {
    const float level = std::nearbyint(v * inverse);
    q.push_back(static_cast<uint8_t>(std::clamp(level, 0.f, float{kInt8ActivationMax})));
  }
  return q;
}

// A convolution with an output scale writes u8: its own f32 output (the same convolution
// without the scale) quantized, bit for bit, with or without ReLU and bias; the output scale
// puts the largest values past 127, so the clamp is exercised too. With power-of-two scales
// and no bias the f32 output is the integer reference's, so that is checked as well.
TEST(CpuInt8Conv, U8OutputIsItsF32OutputQuantizedBitForBit) {
  auto backend = cpu_backend();
  uint32_t seed = 500;
  for (const Int8ConvCase& c : kConvCases)
    for (bool exact : {true, false})
      for (bool relu : {false, true}) {
        Conv2dDesc d = exact ? int8_conv(c, power_of_two_scales(c.filters), false, relu)
                             : int8_conv(c, arbitrary_scales(c.filters, seed++), true, relu);
        const auto x = random_activations(d.input.numel(), seed++);
        const auto w = random_floats(weight_count(d), seed++, -1.f, 1.f);
        std::vector<std::vector<float>> params = {w};
        if (d.has_bias) params.push_back(random_floats(c.filters, seed++, -2.f, 2.f));
        const auto outputs = static_cast<size_t>(d.output().numel());
        Int8Runner f32_runner(*backend, d);
        ASSERT_NE(f32_runner.kernel(), nullptr) << int8_conv_name(d);
        const std::vector<float> y = f32_runner.run(x, params, outputs);
        if (exact) {
          const auto sums = reference_conv_sums(d, x, reference_weights(w, d.int8->weight_scales));
          expect_exact(y, rescale(sums, *d.int8, nullptr, relu).y, int8_conv_name(d));
        }
        const float largest = *std::max_element(y.begin(), y.end());
        d.int8->output_scale = std::max(largest, 1e-3f) / 150.f;
        Int8Runner u8_runner(*backend, d);
        ASSERT_NE(u8_runner.kernel(), nullptr) << int8_conv_name(d) << " u8";
        const std::vector<uint8_t> got = u8_runner.run_bytes(x, params, outputs);
        const std::vector<uint8_t> want = reference_quantize(y, *d.int8->output_scale);
        ASSERT_EQ(got.size(), want.size());
        int reported = 0, saturated = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          saturated += want[i] == kInt8ActivationMax;
          if (got[i] != want[i] && reported++ < 5)
            ADD_FAILURE() << int8_conv_name(d) << " u8[" << i << "]: got " << int{got[i]}
                          << ", expected " << int{want[i]} << " (f32 " << y[i] << ")";
        }
        EXPECT_GT(saturated, 0) << int8_conv_name(d);
      }
}

TEST(CpuInt8Conv, RefusesBadOutputScalesAndU8DenseOutputs) {
  auto backend = cpu_backend();
  const Int8ConvCase c{{1, 6, 6, 8}, 4, 3, 3, 1, Padding::same};
  for (float bad : {0.f, -1.f, std::numeric_limits<float>::infinity()}) {
    Int8Conv q = power_of_two_scales(4);
    q.output_scale = bad;
    auto refused = backend->compile(int8_conv(c, q, false, false));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), StatusCode::invalid_argument) << refused.status().message();
  }
  DenseDesc dense;
  dense.batch = 1;
  dense.in_features = 8;
  dense.out_features = 4;
  dense.training = false;
  dense.needs_input_grad = false;
  dense.int8 = power_of_two_scales(4);
  dense.int8->output_scale = 0.5f;
  auto refused = backend->compile(dense);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("convolutions only"), std::string::npos)
      << refused.status().message();
}

DenseDesc int8_dense(int64_t batch, int64_t in, int64_t out, const Int8Conv& q, bool bias) {
  DenseDesc d;
  d.batch = batch;
  d.in_features = in;
  d.out_features = out;
  d.has_bias = bias;
  d.needs_input_grad = false;
  d.training = false;
  d.int8 = q;
  return d;
}

TEST(CpuInt8Dense, IntegerSumsMatchBitForBitAndScalesWithBias) {
  auto backend = cpu_backend();
  for (int64_t batch : {1, 3}) {
    const DenseDesc exact = int8_dense(batch, 37, 11, power_of_two_scales(11), false);
    const auto x = random_activations(batch * 37, 300 + static_cast<uint32_t>(batch));
    const auto w = random_floats(37 * 11, 301, -2.f, 2.f);
    Int8Runner runner(*backend, exact);
    ASSERT_NE(runner.kernel(), nullptr);
    EXPECT_NE(runner.kernel()->implementation().find(" int8"), std::string::npos);
    const auto sums =
        reference_dense_sums(exact, x, reference_weights(w, exact.int8->weight_scales));
    expect_exact(runner.run(x, {w}, static_cast<size_t>(batch * 11)),
                 rescale(sums, *exact.int8, nullptr, false).y, "dense exact");

    const DenseDesc scaled = int8_dense(batch, 37, 11, arbitrary_scales(11, 302), true);
    const auto bias = random_floats(11, 303, -2.f, 2.f);
    Int8Runner scaled_runner(*backend, scaled);
    ASSERT_NE(scaled_runner.kernel(), nullptr);
    const auto scaled_sums =
        reference_dense_sums(scaled, x, reference_weights(w, scaled.int8->weight_scales));
    expect_close(scaled_runner.run(x, {w, bias}, static_cast<size_t>(batch * 11)),
                 rescale(scaled_sums, *scaled.int8, &bias, false), "dense scaled");
  }
}

TEST(CpuInt8Dense, RefusesTraining) {
  auto backend = cpu_backend();
  DenseDesc d = int8_dense(2, 8, 3, power_of_two_scales(3), true);
  d.training = true;
  auto refused = backend->compile(d);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::invalid_argument) << refused.status().message();
}

// y = clamp(round_half_even(x * (1 / scale)), 0, max_level), as quantize_kernel.cc computes.
std::vector<uint8_t> run_quantize(Backend& backend, const QuantizeDesc& d,
                                  const std::vector<float>& x) {
  auto kernel = backend.compile(d);
  EXPECT_TRUE(kernel.ok()) << kernel.status().message();
  if (!kernel.ok()) return {};
  auto in = backend.allocate(x.size() * 4);
  auto out = backend.allocate(std::max<size_t>(x.size(), 64));
  EXPECT_TRUE(in.ok() && out.ok());
  backend.upload(in->data(), x.data(), x.size() * 4);
  OpBindings b;
  b.inputs = {in->data()};
  b.outputs = {out->data()};
  EXPECT_TRUE(kernel.value()->bind(b).ok());
  kernel.value()->forward(StepContext{});
  std::vector<uint8_t> y(x.size());
  backend.download(y.data(), out->data(), y.size());
  return y;
}

TEST(CpuQuantize, RoundsHalfToEvenAndClamps) {
  auto backend = cpu_backend();
  // scale 0.5: x / scale = 2x exactly.
  const std::vector<float> x{0.f,   1.25f,  1.75f,  0.75f, 0.25f,  -0.25f, -3.f,
                             -1e9f, 63.25f, 63.75f, 64.f,  1000.f, 1e30f,  0.2f};
  const std::vector<uint8_t> expected{0, 2, 4, 2, 0, 0, 0, 0, 126, 127, 127, 127, 127, 0};
  QuantizeDesc d;
  d.input = Shape{1, 1, 1, static_cast<int64_t>(x.size())};
  d.scale = 0.5f;
  EXPECT_EQ(run_quantize(*backend, d, x), expected);

  d.max_level = 255;
  const std::vector<float> wide{127.25f, 127.75f, 126.75f, 200.f};
  d.input = Shape{1, 1, 1, 4};
  EXPECT_EQ(run_quantize(*backend, d, wide), (std::vector<uint8_t>{254, 255, 254, 255}));

  // Not numbers: NaN and -inf give 0, +inf the top level.
  const std::vector<float> odd{std::nanf(""), -INFINITY, INFINITY};
  d.input = Shape{1, 1, 1, 3};
  EXPECT_EQ(run_quantize(*backend, d, odd), (std::vector<uint8_t>{0, 0, 255}));
}

TEST(CpuQuantize, MatchesReferenceAtArbitraryScale) {
  auto backend = cpu_backend();
  QuantizeDesc d;
  d.input = Shape{2, 9, 7, 35};
  d.scale = 0.0137f;
  const auto x = random_floats(d.input.numel(), 400, -0.5f, 2.f);
  const float inverse = 1.f / d.scale;
  std::vector<uint8_t> expected;
  for (float v : x)
    expected.push_back(static_cast<uint8_t>(std::clamp(std::nearbyint(v * inverse), 0.f, 127.f)));
  EXPECT_EQ(run_quantize(*backend, d, x), expected);
}

// A u8 value moved to another scale is Quantize's formula on its float32 value.
TEST(CpuQuantize, RequantizesU8AsQuantizeDoesItsFloatValue) {
  auto backend = cpu_backend();
  QuantizeDesc d;
  d.input = Shape{1, 3, 5, 70};
  d.source = DType::u8;
  d.source_scale = 0.045f;
  for (float scale : {0.06f, 0.03f}) {  // coarser; finer (the top levels clamp)
    d.scale = scale;
    const auto x = random_activations(d.input.numel(), 8);
    std::vector<uint8_t> expected;
    for (uint8_t q : x)
      expected.push_back(static_cast<uint8_t>(std::clamp(
          std::nearbyint(static_cast<float>(q) * d.source_scale * (1.f / scale)), 0.f, 127.f)));
    EXPECT_EQ(Int8Runner(*backend, d).run_bytes(x, {}, x.size()), expected) << scale;
  }
  d.source_scale = 0.f;
  EXPECT_FALSE(backend->compile(d).ok());
}

// Max pooling of levels is the max of the levels; average pooling their rounded mean (SAME
// padding left out of the count, as in float32).
TEST(CpuPoolU8, PoolsTheLevelsThemselves) {
  auto backend = cpu_backend();
  Pool2dDesc d;
  d.input = Shape{2, 5, 6, 19};
  d.kernel_h = d.kernel_w = 3;
  d.stride_h = d.stride_w = 1;
  d.padding = Padding::same;
  d.training = false;
  d.activations = DType::u8;
  const auto x = random_activations(d.input.numel(), 9);
  const int64_t h = d.input.h(), w = d.input.w(), c = d.input.c();
  for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
    d.kind = kind;
    std::vector<uint8_t> expected;
    for (int64_t n = 0; n < d.input.n(); ++n)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j)
          for (int64_t k = 0; k < c; ++k) {
            int top = 0, sum = 0, count = 0;
            for (int64_t a = std::max<int64_t>(i - 1, 0); a <= std::min(i + 1, h - 1); ++a)
              for (int64_t e = std::max<int64_t>(j - 1, 0); e <= std::min(j + 1, w - 1); ++e) {
                const int v = x[static_cast<size_t>(((n * h + a) * w + e) * c + k)];
                top = std::max(top, v);
                sum += v;
                ++count;
              }
            expected.push_back(static_cast<uint8_t>(
                kind == PoolKind::max
                    ? top
                    : std::nearbyint(static_cast<float>(sum) / static_cast<float>(count))));
          }
    const std::vector<uint8_t> got = Int8Runner(*backend, d).run_bytes(x, {}, x.size());
    ASSERT_EQ(got.size(), expected.size());
    int64_t off = 0;
    for (size_t i = 0; i < got.size(); ++i) off += got[i] != expected[i];
    EXPECT_EQ(off, 0) << (kind == PoolKind::max ? "max" : "avg") << ": " << off << " differ";
  }
  d.training = true;  // u8 is for inference only
  EXPECT_FALSE(backend->compile(d).ok());
}

TEST(CpuConcatU8, ConcatenatesTheChannelsOfEachPixel) {
  auto backend = cpu_backend();
  ConcatDesc d;
  d.inputs = {Shape{2, 3, 3, 5}, Shape{2, 3, 3, 2}};
  d.activations = DType::u8;
  const auto a = random_activations(d.inputs[0].numel(), 10),
             b = random_activations(d.inputs[1].numel(), 11);
  std::vector<uint8_t> expected;
  for (int64_t p = 0; p < 18; ++p) {
    expected.insert(expected.end(), a.begin() + p * 5, a.begin() + p * 5 + 5);
    expected.insert(expected.end(), b.begin() + p * 2, b.begin() + p * 2 + 2);
  }
  EXPECT_EQ(Int8Runner(*backend, d).run_bytes({a, b}, {}, expected.size()), expected);
}

}  // namespace
}  // namespace ic
