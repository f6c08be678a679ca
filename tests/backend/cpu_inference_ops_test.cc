// Forward-only kernels on the CPU backend (what inference graphs compile): convolution with a
// bias and the fused ReLU, ReLU6, sigmoid or swish post-op, constant weights converted once, the
// implementation chosen by timing; pooling and dense on forward_inference. All against the
// double-precision reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "backend/cpu/im2col_conv.h"
#include "backend/cpu/winograd_conv.h"
#include "backend/cpu/winograd_toom_cook_conv.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::computes_in_bf16;
using testing::cpu_backend;
using testing::expect_near;
using testing::OpHarness;
using testing::OpRun;
using testing::random_vec;
using testing::rounded_to_bf16;
using testing::Vec;

struct InferenceCase {
  Shape input;
  int64_t filters;
  int kh, kw, stride;
  Padding padding;
};

// Odd sizes, TF's asymmetric SAME padding, strides, 1x7 / 7x1, and 3x3 stride 1 on a map
// large enough for Winograd where the CPU has it.
const InferenceCase kInferenceCases[] = {
    {{2, 7, 5, 3}, 4, 3, 3, 1, Padding::same},     {{2, 8, 6, 5}, 3, 3, 3, 2, Padding::same},
    {{2, 7, 5, 3}, 5, 3, 3, 2, Padding::valid},    {{1, 7, 5, 8}, 4, 1, 7, 1, Padding::same},
    {{1, 7, 5, 8}, 4, 7, 1, 1, Padding::same},     {{2, 6, 6, 17}, 19, 1, 1, 1, Padding::same},
    {{1, 36, 36, 32}, 33, 3, 3, 1, Padding::same},
};

Conv2dDesc inference_conv(const InferenceCase& c, bool relu, bool constant, bool timed) {
  Conv2dDesc d = testing::conv_geometry(c.input, c.filters, c.kh, c.kw, c.stride, c.padding);
  d.has_bias = true;
  d.training = false;
  d.fused_relu = relu;
  d.constant_weights = constant;
  d.time_algorithms = timed;
  return d;
}

// `layer` at `batch` images in `groups` groups, timed, asked to compute in bf16 on bf16
// activations (what a bf16 inference graph compiles).
Conv2dDesc timed_bf16_conv(const InferenceCase& layer, int64_t batch, int64_t groups) {
  InferenceCase c = layer;
  c.input[0] = batch;
  Conv2dDesc d = inference_conv(c, true, true, /*timed=*/true);
  d.groups = groups;
  d.compute = DType::bf16;
  d.activations = DType::bf16;
  return d;
}

OpRun forward_run(const Conv2dDesc& d, uint32_t seed) {
  OpRun run;
  run.inputs = {random_vec(d.input.numel(), seed)};
  run.params = {random_vec(d.weight_count(), seed + 1), random_vec(d.out_channels, seed + 2)};
  run.output_sizes = {size_t(d.output().numel())};
  return run;
}

Vec reference(const Conv2dDesc& d, const OpRun& run) {
  Vec y = ref::conv2d_forward(d, run.inputs[0], run.params[0], run.params[1]);
  if (d.fused_relu)
    for (double& v : y) v = std::max(v, 0.0);
  if (d.fused_activation) y = ref::activation_forward(*d.fused_activation, y);
  return y;
}

std::string conv_name(const Conv2dDesc& d) {
  return d.input.str() + " k" + std::to_string(d.kernel_h) + "x" + std::to_string(d.kernel_w) +
         " s" + std::to_string(d.stride_h) + " g" + std::to_string(d.groups) +
         (d.fused_relu ? " relu" : "") +
         (d.fused_activation ? std::string(" ") + activation_name(*d.fused_activation) : "") +
         (d.constant_weights ? " constant" : "") + (d.time_algorithms ? " timed" : "") +
         (d.compute == DType::bf16 ? " bf16" : "");
}

TEST(CpuInferenceConv, BiasAndReluPostOpMatchReference) {
  auto backend = cpu_backend();
  uint32_t seed = 500;
  for (const InferenceCase& c : kInferenceCases)
    for (bool relu : {false, true})
      for (bool constant : {false, true}) {
        const Conv2dDesc d = inference_conv(c, relu, constant, /*timed=*/false);
        SCOPED_TRACE(conv_name(d));
        OpHarness h(*backend, d);
        ASSERT_TRUE(h.ok());
        EXPECT_FALSE(h.kernel().implementation().empty());
        EXPECT_EQ(h.kernel().saved_bytes(), 0u);
        OpRun run = forward_run(d, seed += 10);
        h.run(run);
        expect_near(run.outputs[0], reference(d, run), 1e-4, 1e-4, "conv+bias(+relu) y");
        if (relu) {
          const auto negative = std::count_if(run.outputs[0].begin(), run.outputs[0].end(),
                                              [](double v) { return v < 0; });
          EXPECT_EQ(negative, 0);
        }
      }
}

// Constant weights are converted at the first forward after bind: binding again with other
// weights (as the harness does each run) must use the new ones.
TEST(CpuInferenceConv, ConstantWeightsFollowEachBind) {
  auto backend = cpu_backend();
  const Conv2dDesc d = inference_conv(kInferenceCases[0], true, true, false);
  OpHarness h(*backend, d);
  for (uint32_t seed : {11u, 23u, 37u}) {
    OpRun run = forward_run(d, seed);
    h.run(run);
    expect_near(run.outputs[0], reference(d, run), 1e-4, 1e-4, "rebound conv y");
  }
}

// Two kernels (two graphs' batch sizes) reading one weights buffer share its converted copy;
// each must still compute its own batch right.
TEST(CpuInferenceConv, KernelsOverOneWeightArenaAgree) {
  auto backend = cpu_backend();
  const InferenceCase base{{1, 9, 9, 16}, 24, 3, 3, 1, Padding::same};
  InferenceCase bigger = base;
  bigger.input = Shape{3, 9, 9, 16};
  const Conv2dDesc d1 = inference_conv(base, true, true, false);
  const Conv2dDesc d3 = inference_conv(bigger, true, true, false);
  auto k1 = backend->compile(d1);
  auto k3 = backend->compile(d3);
  ASSERT_TRUE(k1.ok() && k3.ok());
  auto upload = [&](const Vec& v) {
    DeviceBuffer buffer = std::move(backend->allocate(v.size() * 4)).value();
    std::vector<float> f(v.begin(), v.end());
    backend->upload(buffer.data(), f.data(), f.size() * 4);
    return buffer;
  };
  const Vec w = random_vec(3 * 3 * 16 * 24, 5), b = random_vec(24, 6);
  const Vec x = random_vec(static_cast<size_t>(bigger.input.numel()), 7);
  DeviceBuffer w_buf = upload(w), b_buf = upload(b), x_buf = upload(x);
  std::vector<DeviceBuffer> keep;
  auto run = [&](OpKernel& kernel, const Conv2dDesc& d) {
    OpBindings bind;
    bind.inputs = {x_buf.data()};
    keep.push_back(std::move(backend->allocate(d.output().numel() * 4)).value());
    bind.outputs = {keep.back().data()};
    bind.params = {w_buf.data(), b_buf.data()};
    keep.push_back(
        std::move(backend->allocate(std::max<size_t>(kernel.workspace_bytes(), 64))).value());
    bind.workspace = keep.back().data();
    EXPECT_TRUE(kernel.bind(bind).ok());
    kernel.forward(StepContext{});
    std::vector<float> y(static_cast<size_t>(d.output().numel()));
    backend->download(y.data(), bind.outputs[0], y.size() * 4);
    return Vec(y.begin(), y.end());
  };
  const Vec y1 = run(**k1, d1);
  const Vec y3 = run(**k3, d3);
  Vec x1(x.begin(), x.begin() + base.input.numel());
  Vec ref1 = ref::conv2d_forward(d1, x1, w, b), ref3 = ref::conv2d_forward(d3, x, w, b);
  for (double& v : ref1) v = std::max(v, 0.0);
  for (double& v : ref3) v = std::max(v, 0.0);
  expect_near(y1, ref1, 1e-4, 1e-4, "batch 1");
  expect_near(y3, ref3, 1e-4, 1e-4, "batch 3");
}

// The implementation picked by timing is one of oneDNN's or one of our products, and computes
// the same convolution as the fixed choice, within float32 rounding of a different summation
// order.
TEST(CpuInferenceConv, TimedChoiceIsValidAndAgrees) {
  auto backend = cpu_backend();
  uint32_t seed = 900;
  for (const InferenceCase& c : kInferenceCases) {
    const Conv2dDesc fixed = inference_conv(c, true, true, false);
    const Conv2dDesc timed = inference_conv(c, true, true, true);
    SCOPED_TRACE(conv_name(timed));
    OpHarness fixed_h(*backend, fixed), timed_h(*backend, timed);
    ASSERT_TRUE(fixed_h.ok() && timed_h.ok());
    const std::string impl = timed_h.kernel().implementation();
    EXPECT_TRUE(impl.find(" direct ") != std::string::npos ||
                impl.find(" winograd ") != std::string::npos ||
                impl.find(" auto ") != std::string::npos || impl.rfind("ic:im2col ", 0) == 0 ||
                impl.rfind("ic:matmul ", 0) == 0 || impl.rfind("ic:winograd ", 0) == 0)
        << impl;
    EXPECT_EQ(impl.find("ref"), std::string::npos) << impl;  // never oneDNN's reference loops
    OpRun a = forward_run(fixed, seed += 10);
    OpRun b = a;
    fixed_h.run(a);
    timed_h.run(b);
    expect_near(b.outputs[0], a.outputs[0], 1e-5, 1e-5, "timed vs fixed");
    expect_near(b.outputs[0], reference(timed, b), 1e-4, 1e-4, "timed vs reference");
    // The same shape again is not timed again and gets the same implementation.
    auto again = backend->compile(timed);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->implementation(), impl);
  }
}

// A timed bf16 convolution may compute in float32 where that is faster, but the choice is made
// once per layer: the same layer at other batch sizes keeps it, so that an image gets the same
// answer whatever batch a server puts it in.
TEST(CpuInferenceConv, TimedComputeTypeIsTheLayersAtEveryBatch) {
  auto backend = cpu_backend();
  if (!backend->has_native_bf16()) GTEST_SKIP() << "no bf16 convolutions: float32 throughout";
  const InferenceCase layers[] = {{{1, 14, 14, 24}, 40, 1, 1, 1, Padding::same},
                                  {{1, 13, 13, 16}, 16, 3, 3, 1, Padding::same},
                                  {{1, 15, 15, 32}, 24, 3, 3, 2, Padding::valid},
                                  {{1, 12, 12, 48}, 48, 1, 1, 1, Padding::same}};
  for (const InferenceCase& layer : layers) {
    for (int64_t groups : {int64_t{1}, layer.input.c()}) {
      if (groups > 1 && layer.filters != layer.input.c()) continue;
      std::string first;
      for (int64_t batch : {1, 2, 3, 4, 6, 8, 12, 16}) {
        const Conv2dDesc d = timed_bf16_conv(layer, batch, groups);
        SCOPED_TRACE(conv_name(d));
        auto kernel = backend->compile(d);
        ASSERT_TRUE(kernel.ok()) << kernel.status().message();
        const std::string type = computes_in_bf16(**kernel) ? "bf16" : "f32";
        if (first.empty()) first = type;
        EXPECT_EQ(type, first) << (*kernel)->implementation();
      }
    }
  }
}

// Backend::conv_compute_type, what the inference graph asks before it decides a layer's
// activations: one answer per layer at every batch size, and the kernels compiled after it agree
// (a bf16 answer computes in bf16; a float32 one computes in float32 even where bf16 is asked).
// Without timing it is the type asked; without bf16 convolutions, float32.
TEST(CpuInferenceConv, ComputeTypeIsTheLayersAndItsKernelsFollowIt) {
  auto backend = cpu_backend();
  const InferenceCase layers[] = {{{1, 11, 11, 24}, 56, 1, 1, 1, Padding::same},
                                  {{1, 9, 9, 40}, 40, 3, 3, 1, Padding::same},
                                  {{1, 17, 17, 8}, 16, 3, 3, 2, Padding::valid}};
  for (const InferenceCase& layer : layers) {
    for (int64_t groups : {int64_t{1}, layer.input.c()}) {
      if (groups > 1 && layer.filters != layer.input.c()) continue;
      DType first = DType::i32;
      for (int64_t batch : {1, 3, 2, 5}) {
        Conv2dDesc d = timed_bf16_conv(layer, batch, groups);
        SCOPED_TRACE(conv_name(d));
        auto type = backend->conv_compute_type(d);
        ASSERT_TRUE(type.ok()) << type.status().message();
        if (!backend->has_native_bf16()) {
          EXPECT_EQ(*type, DType::f32);
        }
        if (first == DType::i32) first = *type;
        EXPECT_EQ(*type, first) << "batch " << batch;
        auto kernel = backend->compile(d);
        ASSERT_TRUE(kernel.ok()) << kernel.status().message();
        EXPECT_EQ(computes_in_bf16(**kernel), *type == DType::bf16) << (*kernel)->implementation();

        d.time_algorithms = false;
        auto fixed = backend->conv_compute_type(d);
        ASSERT_TRUE(fixed.ok()) << fixed.status().message();
        EXPECT_EQ(*fixed, backend->has_native_bf16() ? DType::bf16 : DType::f32);
      }
    }
  }
  Conv2dDesc bad = inference_conv({{1, 2, 2, 3}, 4, 5, 5, 1, Padding::valid}, true, true, true);
  EXPECT_FALSE(backend->conv_compute_type(bad).ok()) << "input smaller than the kernel";
}

// ReLU6, sigmoid and swish as the convolution's post-op (MobileNet's and EfficientNet's
// inference graphs): plain, depthwise and grouped convolutions, fixed and timed, in float32 and
// computing in bf16 (where the CPU has bf16 dot products, against the reference on x and w
// rounded to bf16).
TEST(CpuInferenceConv, FusedActivationsMatchReference) {
  auto backend = cpu_backend();
  uint32_t seed = 1300;
  for (Activation f : {Activation::relu6, Activation::sigmoid, Activation::swish})
    for (int64_t groups : {int64_t{1}, int64_t{12}, int64_t{3}})
      for (DType compute : {DType::f32, DType::bf16}) {
        Conv2dDesc d = inference_conv({{2, 9, 7, 12}, 12, 3, 3, groups == 1 ? 2 : 1, Padding::same},
                                      false, true, /*timed=*/groups == 1);
        d.groups = groups;
        d.fused_activation = f;
        d.compute = compute;
        SCOPED_TRACE(conv_name(d));
        OpHarness h(*backend, d);
        ASSERT_TRUE(h.ok());
        OpRun run = forward_run(d, seed += 10);
        // ReLU6 clips at 6: scale the input up so that part of the output lies above it.
        for (double& v : run.inputs[0]) v *= 4.0;
        h.run(run);
        // In bf16 the kernel reads x and w rounded to bf16 and sums in f32. Timing may pick
        // float32 for a bf16 convolution (where it is faster); its name then lacks " bf16".
        const bool in_bf16 = computes_in_bf16(h.kernel());
        if (compute == DType::bf16 && !d.time_algorithms && backend->has_native_bf16()) {
          EXPECT_TRUE(in_bf16) << h.kernel().implementation();
        }
        OpRun rounded = run;
        if (in_bf16) {
          rounded.inputs[0] = rounded_to_bf16(run.inputs[0]);
          rounded.params[0] = rounded_to_bf16(run.params[0]);
        }
        const Vec want = reference(d, rounded);
        expect_near(run.outputs[0], want, 1e-4, 1e-4, "conv+activation y");
        if (f == Activation::relu6) {
          EXPECT_GT(std::count_if(want.begin(), want.end(), [](double v) { return v >= 6.0; }), 0);
        }
      }
}

// Runs `h`, a kernel for `d` (with or without its bias), twice on one forward run and checks
// both outputs against the reference within `tolerance`. Twice: the harness poisons the
// workspace after each run, so whatever a kernel copies there must be rebuilt at each forward.
void expect_runs_match_reference(OpHarness& h, const Conv2dDesc& d, uint32_t seed,
                                 double tolerance) {
  OpRun run = forward_run(d, seed);
  if (!d.has_bias) run.params.pop_back();
  h.run(run);
  OpRun again = run;
  h.run(again);
  OpRun with_zero_bias = run;
  if (!d.has_bias) with_zero_bias.params.push_back(Vec(size_t(d.out_channels), 0.0));
  const Vec want = reference(d, with_zero_bias);
  expect_near(run.outputs[0], want, tolerance, tolerance, "y");
  expect_near(again.outputs[0], want, tolerance, tolerance, "y again");
}

// The convolution as a matrix product over its columns (backend/cpu/im2col_conv.h), one of the
// plans timing tries: every padding and stride, pointwise ones reading their input as it is,
// with and without a bias, each post-op, weights constant (converted once) or not, and a batch
// of three larger images (three products, an image each).
TEST(CpuIm2colConv, MatchesReference) {
  auto backend = cpu_backend();
  cpu::DnnlContext ctx;
  // 32x32 outputs of 3x3 over 85 channels: 3.0 MiB of columns an image.
  const InferenceCase big{{3, 32, 32, 85}, 16, 3, 3, 1, Padding::same};
  std::vector<InferenceCase> cases(std::begin(kInferenceCases), std::end(kInferenceCases));
  cases.push_back({{2, 9, 9, 6}, 5, 1, 1, 2, Padding::same});  // pointwise, stride 2: copied
  cases.push_back(big);
  uint32_t seed = 1700;
  for (const InferenceCase& c : cases)
    for (int post = 0; post < 3; ++post)
      for (bool constant : {false, true}) {
        Conv2dDesc d = inference_conv(c, post == 1, constant, /*timed=*/false);
        if (post == 2) d.fused_activation = Activation::swish;
        d.has_bias = post != 0;
        SCOPED_TRACE(conv_name(d) + (d.has_bias ? " bias" : ""));
        ASSERT_TRUE(cpu::im2col_conv_applies(d));
        OpHarness h(*backend, cpu::make_im2col_conv(d, ctx));
        const std::string impl = h.kernel().implementation();
        const bool pointwise = c.kh == 1 && c.kw == 1 && c.stride == 1;
        EXPECT_EQ(impl.rfind(pointwise ? "ic:matmul " : "ic:im2col ", 0), 0u) << impl;
        if (c.input == big.input) {
          EXPECT_NE(impl.find("3 products"), std::string::npos) << impl;
        }
        expect_runs_match_reference(h, d, seed += 10, 1e-4);
      }
}

// Every image of a batch is computed as any other: the same image gives the same outputs bit for
// bit wherever it is in the batch (a server's answer must not depend on its neighbours). `d`
// has 5 images; each is the first one again.
void expect_place_in_batch_irrelevant(OpHarness& h, const Conv2dDesc& d, uint32_t seed) {
  OpRun run = forward_run(d, seed);
  const size_t image = static_cast<size_t>(d.input.numel() / 5);
  for (size_t i = image; i < run.inputs[0].size(); ++i) run.inputs[0][i] = run.inputs[0][i % image];
  h.run(run);
  const size_t out = static_cast<size_t>(d.output().numel() / 5);
  for (size_t i = out; i < run.outputs[0].size(); ++i)
    ASSERT_EQ(run.outputs[0][i], run.outputs[0][i % out])
        << "image " << i / out << " at " << i % out;
}

// Winograd F(2x2,3x3): SAME and VALID, odd and even output sizes (a tile's second row or column
// past the edge), channel counts off any vector width, with and without the bias and the ReLU.
TEST(CpuWinogradConv, MatchesReference) {
  auto backend = cpu_backend();
  cpu::DnnlContext ctx;
  const InferenceCase cases[] = {
      {{2, 9, 7, 5}, 7, 3, 3, 1, Padding::same},   {{2, 9, 7, 5}, 7, 3, 3, 1, Padding::valid},
      {{1, 8, 8, 16}, 24, 3, 3, 1, Padding::same}, {{1, 10, 11, 19}, 33, 3, 3, 1, Padding::valid},
      {{3, 3, 3, 4}, 2, 3, 3, 1, Padding::same},
  };
  uint32_t seed = 2100;
  for (const InferenceCase& c : cases)
    for (int post = 0; post < 3; ++post) {
      Conv2dDesc d = inference_conv(c, post == 1, /*constant=*/true, /*timed=*/false);
      d.has_bias = post != 2;
      SCOPED_TRACE(conv_name(d) + (d.has_bias ? " bias" : "") + (d.fused_relu ? " relu" : ""));
      ASSERT_TRUE(cpu::winograd_conv_applies(d));
      OpHarness h(*backend, cpu::make_winograd_conv(d, ctx));
      EXPECT_EQ(h.kernel().implementation().rfind("ic:winograd F(2x2,3x3) ", 0), 0u);
      expect_runs_match_reference(h, d, seed += 10, 1e-5);
    }
  Conv2dDesc strided = inference_conv(cases[0], false, true, false);
  strided.stride_h = strided.stride_w = 2;
  EXPECT_FALSE(cpu::winograd_conv_applies(strided));
  Conv2dDesc changing = inference_conv(cases[0], false, /*constant=*/false, false);
  EXPECT_FALSE(cpu::winograd_conv_applies(changing));
}

TEST(CpuWinogradConv, AnImagesOutputDoesNotDependOnItsPlaceInTheBatch) {
  auto backend = cpu_backend();
  cpu::DnnlContext ctx;
  const Conv2dDesc d =
      inference_conv({{5, 9, 8, 12}, 16, 3, 3, 1, Padding::same}, true, true, false);
  OpHarness h(*backend, cpu::make_winograd_conv(d, ctx));
  expect_place_in_batch_irrelevant(h, d, 2300);
}

// Winograd by Toom-Cook's transforms: F(2,7) and F(4,3) on 1x7, 7x1, 1x3 and 3x1 kernels and
// F(4x4,3x3) on 3x3 ones (on maps of 64 tiles or more), SAME and VALID, output sizes that are not a
// multiple of the tile's (the last outputs past the edge), channel counts off any vector width,
// with and without the bias and the ReLU.
TEST(CpuWinogradToomCookConv, MatchesReference) {
  auto backend = cpu_backend();
  cpu::DnnlContext ctx;
  const InferenceCase cases[] = {
      {{2, 9, 11, 5}, 7, 1, 7, 1, Padding::same},     {{2, 11, 9, 5}, 7, 7, 1, 1, Padding::same},
      {{1, 8, 12, 16}, 9, 1, 7, 1, Padding::valid},   {{1, 12, 8, 16}, 9, 7, 1, 1, Padding::valid},
      {{2, 7, 9, 19}, 33, 1, 3, 1, Padding::same},    {{2, 9, 7, 19}, 33, 3, 1, 1, Padding::same},
      {{1, 6, 7, 8}, 4, 1, 3, 1, Padding::valid},     {{2, 33, 31, 5}, 7, 3, 3, 1, Padding::same},
      {{1, 34, 35, 19}, 33, 3, 3, 1, Padding::valid}, {{1, 32, 32, 16}, 24, 3, 3, 1, Padding::same},

  };
  const std::map<std::pair<int, int>, std::string> names = {{{1, 7}, "F(2,7) along w"},
                                                            {{7, 1}, "F(2,7) along h"},
                                                            {{1, 3}, "F(4,3) along w"},
                                                            {{3, 1}, "F(4,3) along h"},
                                                            {{3, 3}, "F(4x4,3x3)"}};
  uint32_t seed = 2400;
  for (const InferenceCase& c : cases)
    for (int post = 0; post < 3; ++post) {
      Conv2dDesc d = inference_conv(c, post == 1, /*constant=*/true, /*timed=*/false);
      d.has_bias = post != 2;
      SCOPED_TRACE(conv_name(d) + (d.has_bias ? " bias" : "") + (d.fused_relu ? " relu" : ""));
      ASSERT_TRUE(cpu::winograd_toom_cook_conv_applies(d));
      OpHarness h(*backend, cpu::make_winograd_toom_cook_conv(d, ctx));
      const std::string want = "ic:winograd " + names.at({c.kh, c.kw}) + " ";
      EXPECT_EQ(h.kernel().implementation().rfind(want, 0), 0u) << h.kernel().implementation();
      // F(4x4,3x3)'s 36 points round more: 1.7e-5 on outputs of 0.45 here (its rounding over
      // long sums is held to the largest output below).
      expect_runs_match_reference(h, d, seed += 10, c.kh == 3 && c.kw == 3 ? 5e-5 : 1e-5);
    }
  Conv2dDesc strided = inference_conv(cases[0], false, true, false);
  strided.stride_w = 2;
  EXPECT_FALSE(cpu::winograd_toom_cook_conv_applies(strided));
  Conv2dDesc changing = inference_conv(cases[0], false, /*constant=*/false, false);
  EXPECT_FALSE(cpu::winograd_toom_cook_conv_applies(changing));
  const Conv2dDesc five =
      inference_conv({{1, 9, 9, 4}, 4, 1, 5, 1, Padding::same}, false, true, false);
  EXPECT_FALSE(cpu::winograd_toom_cook_conv_applies(five));  // no tiling for 5 taps
  // 3x3 on a map of fewer than 64 tiles (28x28: 49): the transformed weights' read would cost
  // more than the products save.
  const Conv2dDesc small =
      inference_conv({{1, 28, 28, 4}, 4, 3, 3, 1, Padding::same}, false, true, false);
  EXPECT_FALSE(cpu::winograd_toom_cook_conv_applies(small));
}

// Inception v3's own layers at full width, where the sums are long: the transforms' rounding
// stays within 1e-5 of the largest output (measured on a Zen 2: 2.2e-6 for 1x7 over 160
// channels and 7x1 over 192, 1.1e-6 for 1x3 over 384, 2.8e-6 for 3x3 over 288; the direct
// convolution's is about 4e-7), and the network's logits stay within the inference graph's 1e-5
// (tests/graph: TimedLayersKeepTheLogits).
TEST(CpuWinogradToomCookConv, InceptionLayersWithinTheTolerance) {
  auto backend = cpu_backend();
  cpu::DnnlContext ctx;
  const InferenceCase cases[] = {
      {{1, 17, 17, 160}, 160, 1, 7, 1, Padding::same},
      {{1, 17, 17, 192}, 192, 7, 1, 1, Padding::same},
      {{1, 8, 8, 384}, 384, 1, 3, 1, Padding::same},
      {{1, 35, 35, 288}, 64, 3, 3, 1, Padding::same},
  };
  uint32_t seed = 2500;
  for (const InferenceCase& c : cases) {
    const Conv2dDesc d = inference_conv(c, false, /*constant=*/true, /*timed=*/false);
    SCOPED_TRACE(conv_name(d));
    OpHarness h(*backend, cpu::make_winograd_toom_cook_conv(d, ctx));
    OpRun run = forward_run(d, seed += 10);
    h.run(run);
    const Vec want = reference(d, run);
    double largest = 0, worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      largest = std::max(largest, std::abs(want[i]));
      worst = std::max(worst, std::abs(run.outputs[0][i] - want[i]));
    }
    std::printf("%s: worst %.2e of the largest output\n", conv_name(d).c_str(), worst / largest);
    EXPECT_LE(worst, 1e-5 * largest) << "worst " << worst << ", largest " << largest;
  }
}

TEST(CpuWinogradToomCookConv, AnImagesOutputDoesNotDependOnItsPlaceInTheBatch) {
  auto backend = cpu_backend();
  cpu::DnnlContext ctx;
  for (const int k : {7, 3}) {
    const Conv2dDesc d = inference_conv({{5, 33, 32, 12}, 16, k, k == 7 ? 1 : 3, 1, Padding::same},
                                        true, true, false);
    SCOPED_TRACE(conv_name(d));
    OpHarness h(*backend, cpu::make_winograd_toom_cook_conv(d, ctx));
    expect_place_in_batch_irrelevant(h, d, 2600 + k);
  }
}

TEST(CpuIm2colConv, AnImagesOutputDoesNotDependOnItsPlaceInTheBatch) {
  auto backend = cpu_backend();
  cpu::DnnlContext ctx;
  uint32_t seed = 1900;
  for (InferenceCase c : kInferenceCases) {
    c.input[0] = 5;
    const Conv2dDesc d = inference_conv(c, true, true, false);
    SCOPED_TRACE(conv_name(d));
    OpHarness h(*backend, cpu::make_im2col_conv(d, ctx));
    expect_place_in_batch_irrelevant(h, d, seed += 10);
  }
}

TEST(CpuIm2colConv, OnlyForwardUngroupedFloat32) {
  Conv2dDesc d = inference_conv(kInferenceCases[0], true, true, true);
  EXPECT_TRUE(cpu::im2col_conv_applies(d));
  Conv2dDesc training = d;
  training.training = true;
  training.fused_relu = false;
  EXPECT_FALSE(cpu::im2col_conv_applies(training));
  Conv2dDesc grouped = inference_conv({{1, 6, 6, 8}, 8, 3, 3, 1, Padding::same}, true, true, true);
  grouped.groups = 4;
  EXPECT_FALSE(cpu::im2col_conv_applies(grouped));
  Conv2dDesc bf16 = d;
  bf16.activations = bf16.compute = DType::bf16;
  EXPECT_FALSE(cpu::im2col_conv_applies(bf16));
  // 147x147 outputs of a 3x3 over 32 channels: 24.9 MB of columns for one image.
  Conv2dDesc huge =
      inference_conv({{1, 147, 147, 32}, 64, 3, 3, 1, Padding::same}, true, true, true);
  EXPECT_FALSE(cpu::im2col_conv_applies(huge));
  // A pointwise one copies nothing, whatever its size.
  Conv2dDesc pointwise =
      inference_conv({{1, 147, 147, 64}, 80, 1, 1, 1, Padding::same}, true, true, true);
  EXPECT_TRUE(cpu::im2col_conv_applies(pointwise));
}

// A pointwise convolution with a depthwise 3x3 one fused after it (Conv2dDesc::fused_depthwise,
// oneDNN's depthwise post-op): strides 1 and 2 on even and odd maps (TF's SAME padding: none
// on the top and left of an even map at stride 2), each convolution with its own activation,
// against the two reference convolutions one after the other.
TEST(CpuFusedDepthwise, MatchesThePointwiseThenTheDepthwiseConvolution) {
  auto backend = cpu_backend();
  uint32_t seed = 2100;
  // Small maps, then MobileNet v2's expansions at 96x96 (six times the channels) at odd
  // batches: oneDNN 2.6's fused kernel on NHWC got [3,48,48,16] wrong, its blocked one not.
  const Shape inputs[] = {{2, 8, 8, 5},    {1, 9, 7, 8},    {3, 48, 48, 16}, {1, 48, 48, 16},
                          {3, 24, 24, 24}, {5, 12, 12, 32}, {3, 6, 6, 64},   {3, 3, 3, 160}};
  for (const Shape& input : inputs)
    for (int stride : {1, 2})
      for (int post = 0; post < 3; ++post) {
        const int64_t width = input.h() > 9 ? input.c() * 6 : 16;
        Conv2dDesc pw =
            inference_conv({input, width, 1, 1, 1, Padding::same}, post == 1, true, false);
        if (post == 2) pw.fused_activation = Activation::relu6;
        Conv2dDesc dw =
            inference_conv({pw.output(), width, 3, 3, stride, Padding::same}, false, true, false);
        dw.groups = width;
        dw.fused_activation = post == 1 ? Activation::swish : Activation::relu6;
        Conv2dDesc both = pw;
        both.fused_depthwise = FusedDepthwise{stride, false, dw.fused_activation};
        SCOPED_TRACE(conv_name(both) + " then depthwise s" + std::to_string(stride));
        ASSERT_TRUE(backend->fuses_depthwise(both));
        OpHarness h(*backend, both);
        ASSERT_TRUE(h.ok());
        // One JIT kernel doing both, or oneDNN's ref_fused_convolution running its two JIT
        // kernels one after the other through a buffer of its own (small maps).
        EXPECT_NE(h.kernel().implementation().find("jit"), std::string::npos)
            << h.kernel().implementation();
        OpRun run = forward_run(both, seed += 10);
        for (double& v : run.inputs[0]) v *= 4.0;  // some values above ReLU6's 6
        const OpRun dw_params = forward_run(dw, seed + 5);
        run.params.push_back(dw_params.params[0]);
        run.params.push_back(dw_params.params[1]);
        run.output_sizes = {size_t(both.output().numel())};
        ASSERT_EQ(both.output(), dw.output());
        h.run(run);
        OpRun second = dw_params;
        second.inputs = {reference(pw, run)};
        expect_near(run.outputs[0], reference(dw, second), 1e-4, 1e-4, "fused y");
      }
}

TEST(CpuFusedDepthwise, OnlyAfterAForwardOnlyPointwiseConvolution) {
  auto backend = cpu_backend();
  Conv2dDesc d = inference_conv({{1, 8, 8, 4}, 8, 1, 1, 1, Padding::same}, true, true, false);
  d.fused_depthwise = FusedDepthwise{1, true, std::nullopt};
  EXPECT_TRUE(backend->fuses_depthwise(d));
  Conv2dDesc spatial = d;
  spatial.kernel_h = spatial.kernel_w = 3;
  Conv2dDesc strided = d;
  strided.fused_depthwise->stride = 3;
  Conv2dDesc bf16 = d;
  bf16.compute = DType::bf16;
  // 8x7 maps at stride 2: TF's SAME pads the top by 0 and the left by 1, and the post-op takes
  // one padding for both.
  Conv2dDesc uneven = d;
  uneven.input = Shape{1, 8, 7, 4};
  uneven.fused_depthwise->stride = 2;
  for (const Conv2dDesc& bad : {spatial, strided, bf16, uneven}) {
    EXPECT_FALSE(backend->fuses_depthwise(bad));
    auto kernel = backend->compile(bad);
    ASSERT_FALSE(kernel.ok());
    EXPECT_NE(kernel.status().message().find("depthwise"), std::string::npos)
        << kernel.status().message();
  }
}

TEST(CpuInferenceConv, FusedPostOpsNeedForwardOnlyAndOneActivation) {
  auto backend = cpu_backend();
  Conv2dDesc d = inference_conv(kInferenceCases[0], true, false, false);
  d.training = true;
  auto kernel = backend->compile(d);
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("forward only"), std::string::npos)
      << kernel.status().message();
  d.fused_relu = false;
  d.fused_activation = Activation::swish;
  kernel = backend->compile(d);
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("swish is forward only"), std::string::npos)
      << kernel.status().message();
  d.training = false;
  d.fused_relu = true;
  kernel = backend->compile(d);
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("together"), std::string::npos)
      << kernel.status().message();
}

TEST(CpuInferenceOps, PoolingAndDenseForwardOnly) {
  auto backend = cpu_backend();
  for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
    Pool2dDesc d;
    d.input = Shape{2, 7, 8, 5};
    d.kind = kind;
    d.stride_h = d.stride_w = 2;
    d.padding = Padding::same;
    d.training = false;
    OpHarness h(*backend, d);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h.kernel().saved_bytes(), 0u);  // no argmax kept for a backward
    OpRun run;
    run.inputs = {random_vec(d.input.numel(), 3)};
    run.output_sizes = {size_t(d.output().numel())};
    h.run(run);
    expect_near(run.outputs[0], ref::pool2d_forward(d, run.inputs[0]), 1e-6, 1e-6, "pool y");
  }
  DenseDesc d{3, 37, 11, true, false};
  d.training = false;
  OpHarness h(*backend, d);
  ASSERT_TRUE(h.ok());
  OpRun run;
  run.inputs = {random_vec(3 * 37, 4)};
  run.params = {random_vec(37 * 11, 5), random_vec(11, 6)};
  run.output_sizes = {33};
  h.run(run);
  expect_near(run.outputs[0],
              ref::dense_forward(3, 37, 11, run.inputs[0], run.params[0], run.params[1]), 1e-5,
              1e-5, "dense y");
}

}  // namespace
}  // namespace ic
