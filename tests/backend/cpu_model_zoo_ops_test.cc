// The ops of the smaller networks (MobileNet, EfficientNet, DenseNet, SqueezeNet) on the CPU
// backend against the double-precision references: grouped and depthwise convolution, ReLU6 /
// sigmoid / swish, squeeze-and-excitation's per-channel product, zero padding and drop-connect,
// forward and backward, plus central differences of the backend's own f32 gradients.
#include <gtest/gtest.h>

#include "op_harness.h"

namespace ic {
namespace {

using testing::conv_run;
using testing::cpu_backend;
using testing::expect_backend_gradient;
using testing::expect_near;
using testing::OpHarness;
using testing::OpRun;
using testing::random_vec;
using testing::Vec;

Conv2dDesc grouped(Shape input, int64_t filters, int64_t groups, int kernel, int stride,
                   Padding padding, bool bias) {
  Conv2dDesc d;
  d.input = input;
  d.out_channels = filters;
  d.groups = groups;
  d.kernel_h = d.kernel_w = kernel;
  d.stride_h = d.stride_w = stride;
  d.padding = padding;
  d.has_bias = bias;
  return d;
}

TEST(CpuGroupedConv, MatchesReferenceForwardAndBackward) {
  auto backend = cpu_backend();
  const Conv2dDesc cases[] = {
      grouped({2, 7, 5, 8}, 8, 8, 3, 1, Padding::same, false),     // depthwise
      grouped({2, 8, 6, 16}, 16, 16, 3, 2, Padding::same, true),   // depthwise, stride 2, even
      grouped({1, 9, 9, 12}, 12, 12, 5, 2, Padding::same, false),  // EfficientNet's 5x5
      grouped({2, 6, 5, 6}, 9, 3, 3, 1, Padding::valid, true),     // 3 groups of 2 -> 3
      grouped({1, 5, 5, 8}, 4, 2, 1, 1, Padding::same, false),     // grouped 1x1
  };
  uint32_t seed = 300;
  for (const Conv2dDesc& d : cases) {
    SCOPED_TRACE(d.input.str() + " groups " + std::to_string(d.groups));
    OpHarness h(*backend, d);
    ASSERT_TRUE(h.ok());
    OpRun run = conv_run(d, seed += 10);
    h.run(run);
    testing::expect_conv_matches_reference(d, run, 1e-5, 1e-5, 1e-4);
  }
}

TEST(CpuGroupedConv, InferenceWithFusedReluMatchesReference) {
  auto backend = cpu_backend();
  Conv2dDesc d = grouped({1, 10, 10, 32}, 32, 32, 3, 1, Padding::same, true);
  d.training = false;
  d.fused_relu = true;
  d.constant_weights = true;
  OpHarness h(*backend, d);
  OpRun run = conv_run(d, 7);
  run.output_grads.clear();
  h.run(run);
  Vec want = ref::conv2d_forward(d, run.inputs[0], run.params[0], run.params[1]);
  for (double& v : want) v = std::max(v, 0.0);
  expect_near(run.outputs[0], want, 1e-5, 1e-5, "y");
}

TEST(CpuGroupedConv, GroupsThatDoNotDivideTheChannelsAreRefused) {
  auto backend = cpu_backend();
  EXPECT_FALSE(backend->compile(grouped({1, 4, 4, 6}, 6, 4, 3, 1, Padding::same, false)).ok());
  EXPECT_FALSE(backend->compile(grouped({1, 4, 4, 6}, 5, 3, 3, 1, Padding::same, false)).ok());
  EXPECT_FALSE(backend->compile(grouped({1, 4, 4, 6}, 6, 0, 3, 1, Padding::same, false)).ok());
}

TEST(CpuActivations, MatchReferenceForwardAndBackward) {
  auto backend = cpu_backend();
  const Shape s = testing::kOddShape;
  for (Activation f : {Activation::relu6, Activation::sigmoid, Activation::swish}) {
    SCOPED_TRACE(activation_name(f));
    OpHarness h(*backend, ActivationDesc{s, f});
    ASSERT_TRUE(h.ok());
    OpRun run;
    run.inputs = {random_vec(s.numel(), 11, -9, 9)};
    run.output_sizes = {size_t(s.numel())};
    run.output_grads = {random_vec(s.numel(), 12)};
    h.run(run);
    expect_near(run.outputs[0], ref::activation_forward(f, run.inputs[0]), 1e-6, 1e-5, "y");
    expect_near(run.input_grads[0], ref::activation_backward(f, run.inputs[0], run.output_grads[0]),
                1e-6, 1e-5, "dx");
    expect_backend_gradient(h, run, false, 0, 1e-2, 2e-3, 2e-2);
  }
}

TEST(CpuActivations, Relu6ClampsAtBothEnds) {
  auto backend = cpu_backend();
  OpHarness h(*backend, ActivationDesc{Shape{1, 1, 1, 5}, Activation::relu6});
  OpRun run;
  run.inputs = {Vec{-3.0, 0.5, 5.5, 6.5, 100.0}};
  run.output_sizes = {5};
  run.output_grads = {Vec{1, 1, 1, 1, 1}};
  h.run(run);
  EXPECT_EQ(run.outputs[0], (Vec{0.0, 0.5, 5.5, 6.0, 6.0}));
  EXPECT_EQ(run.input_grads[0], (Vec{0.0, 1.0, 1.0, 0.0, 0.0}));
}

TEST(CpuChannelScale, MatchesReferenceForwardAndBackward) {
  auto backend = cpu_backend();
  const Shape s{3, 5, 4, 7};
  OpHarness h(*backend, ChannelScaleDesc{s});
  ASSERT_TRUE(h.ok());
  OpRun run;
  run.inputs = {random_vec(s.numel(), 21), random_vec(s.n() * s.c(), 22)};
  run.output_sizes = {size_t(s.numel())};
  run.output_grads = {random_vec(s.numel(), 23)};
  h.run(run);
  expect_near(run.outputs[0], ref::channel_scale_forward(s, run.inputs[0], run.inputs[1]), 1e-6,
              1e-6, "y");
  const auto g = ref::channel_scale_backward(s, run.inputs[0], run.inputs[1], run.output_grads[0]);
  expect_near(run.input_grads[0], g.dx, 1e-6, 1e-6, "dx");
  expect_near(run.input_grads[1], g.ds, 1e-5, 1e-5, "ds");
  expect_backend_gradient(h, run, false, 1, 1e-2, 1e-3, 1e-2);
  EXPECT_FALSE(backend->compile(ChannelScaleDesc{Shape{3, 7}}).ok());
}

TEST(CpuZeroPad, MatchesReferenceForwardAndBackward) {
  auto backend = cpu_backend();
  const PadDesc d{Shape{2, 5, 4, 3}, Pads{3, 3, 1, 2}};
  OpHarness h(*backend, d);
  ASSERT_TRUE(h.ok());
  OpRun run;
  run.inputs = {random_vec(d.input.numel(), 31)};
  run.output_sizes = {size_t(d.output().numel())};
  run.output_grads = {random_vec(d.output().numel(), 32)};
  h.run(run);
  EXPECT_EQ(d.output(), (Shape{2, 11, 7, 3}));
  EXPECT_EQ(run.outputs[0], ref::pad_forward(d, run.inputs[0]));
  EXPECT_EQ(run.input_grads[0], ref::pad_backward(d, run.output_grads[0]));
  EXPECT_FALSE(backend->compile(PadDesc{Shape{2, 5, 4, 3}, Pads{-1, 0, 0, 0}}).ok());
}

TEST(CpuDropConnect, DropsWholeExamplesWithTheReferenceDraw) {
  auto backend = cpu_backend();
  const Shape s{64, 3, 3, 5};
  DropoutDesc d{s, 0.75f, true};
  d.per_example = true;
  OpHarness h(*backend, d);
  OpRun run;
  run.ctx.seed = 0xfeedbeefull;
  run.inputs = {random_vec(s.numel(), 41)};
  run.output_sizes = {size_t(s.numel())};
  run.output_grads = {random_vec(s.numel(), 42)};
  h.run(run);
  expect_near(run.outputs[0], ref::drop_connect_forward(run.inputs[0], s.n(), 0.75f, run.ctx.seed),
              1e-7, 1e-6, "y");
  expect_near(run.input_grads[0],
              ref::drop_connect_forward(run.output_grads[0], s.n(), 0.75f, run.ctx.seed), 1e-7,
              1e-6, "dx");
  // Every example is all kept or all dropped, and some of each happen.
  const int64_t per = s.numel() / s.n();
  int dropped = 0;
  for (int64_t n = 0; n < s.n(); ++n) {
    int zeros = 0;
    for (int64_t i = 0; i < per; ++i) zeros += run.outputs[0][n * per + i] == 0.0;
    EXPECT_TRUE(zeros == 0 || zeros == per) << "example " << n;
    dropped += zeros == per;
  }
  EXPECT_GT(dropped, 4);
  EXPECT_LT(dropped, 32);
}

}  // namespace
}  // namespace ic
