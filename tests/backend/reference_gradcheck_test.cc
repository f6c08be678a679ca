// The references' own backward passes against central differences of their forward passes,
// in double precision, so the backend tests compare against something known to be right.
#include <gtest/gtest.h>

#include <random>

#include "op_harness.h"

namespace ic {
namespace {

using ref::Vec;
using testing::random_vec;

// Checks analytic[i] == d f / d x[i] at every position (the shapes here are tiny).
template <typename F>
void expect_gradient(F f, const Vec& x, const Vec& analytic, const char* what) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  for (size_t i = 0; i < x.size(); ++i) {
    const double numeric = ref::numeric_derivative(f, x, i, 1e-5);
    ASSERT_NEAR(analytic[i], numeric, 1e-6 + 1e-6 * std::abs(numeric)) << what << " [" << i << "]";
  }
}

TEST(ReferenceOps, ConvGradients) {
  Conv2dDesc d;
  d.input = Shape{1, 5, 4, 2};
  d.out_channels = 3;
  d.kernel_h = 3;
  d.kernel_w = 2;
  d.stride_h = d.stride_w = 2;
  d.has_bias = true;
  const Vec x = random_vec(d.input.numel(), 1), w = random_vec(3 * 2 * 2 * 3, 2),
            b = random_vec(3, 3), dy = random_vec(d.output().numel(), 4);
  const auto g = ref::conv2d_backward(d, x, w, dy);
  expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::conv2d_forward(d, v, w, b)); }, x,
                  g.dx, "conv dx");
  expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::conv2d_forward(d, x, v, b)); }, w,
                  g.dw, "conv dw");
  expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::conv2d_forward(d, x, w, v)); }, b,
                  g.db, "conv db");
}

TEST(ReferenceOps, GroupedAndDepthwiseConvGradients) {
  for (const int64_t groups : {int64_t{2}, int64_t{4}}) {
    Conv2dDesc d;
    d.input = Shape{1, 4, 5, 4};
    d.out_channels = groups == 4 ? 4 : 6;  // 4: depthwise
    d.groups = groups;
    d.kernel_h = d.kernel_w = 3;
    d.padding = Padding::same;
    d.has_bias = true;
    const Vec x = random_vec(d.input.numel(), 21), w = random_vec(d.weight_count(), 22),
              b = random_vec(d.out_channels, 23), dy = random_vec(d.output().numel(), 24);
    const auto g = ref::conv2d_backward(d, x, w, dy);
    expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::conv2d_forward(d, v, w, b)); }, x,
                    g.dx, "grouped conv dx");
    expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::conv2d_forward(d, x, v, b)); }, w,
                    g.dw, "grouped conv dw");
  }
}

// A grouped convolution is its groups' convolutions side by side: each output channel equals
// the plain convolution of its group's input channels with its filter.
TEST(ReferenceOps, GroupedConvIsConvolutionPerGroup) {
  Conv2dDesc d;
  d.input = Shape{1, 3, 3, 4};
  d.out_channels = 2;
  d.groups = 2;
  d.kernel_h = d.kernel_w = 1;
  const Vec x = random_vec(d.input.numel(), 25), w = random_vec(d.weight_count(), 26);
  const Vec y = ref::conv2d_forward(d, x, w, {});
  // w is [1,1,2,2]: w[ci][co]; output 0 reads channels 0,1; output 1 reads channels 2,3.
  for (int64_t p = 0; p < 9; ++p) {
    EXPECT_NEAR(y[p * 2 + 0], x[p * 4 + 0] * w[0 * 2 + 0] + x[p * 4 + 1] * w[1 * 2 + 0], 1e-12);
    EXPECT_NEAR(y[p * 2 + 1], x[p * 4 + 2] * w[0 * 2 + 1] + x[p * 4 + 3] * w[1 * 2 + 1], 1e-12);
  }
}

TEST(ReferenceOps, ActivationScalePadGradients) {
  const Vec x = random_vec(24, 27, -8, 8), dy = random_vec(24, 28);
  for (Activation f : {Activation::relu6, Activation::sigmoid, Activation::swish})
    expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::activation_forward(f, v)); }, x,
                    ref::activation_backward(f, x, dy), activation_name(f));
  EXPECT_EQ(ref::activation_value(Activation::relu6, 7.5), 6.0);
  EXPECT_NEAR(ref::activation_value(Activation::swish, 1.0), 1.0 / (1.0 + std::exp(-1.0)), 1e-15);

  const Shape shape{2, 3, 2, 2};
  const Vec s = random_vec(4, 29);
  const auto g = ref::channel_scale_backward(shape, x, s, dy);
  expect_gradient(
      [&](const Vec& v) { return ref::dot(dy, ref::channel_scale_forward(shape, v, s)); }, x, g.dx,
      "scale_channels dx");
  expect_gradient(
      [&](const Vec& v) { return ref::dot(dy, ref::channel_scale_forward(shape, x, v)); }, s, g.ds,
      "scale_channels ds");

  const PadDesc pad{shape, Pads{1, 2, 0, 3}};
  const Vec dpad = random_vec(pad.output().numel(), 30);
  expect_gradient([&](const Vec& v) { return ref::dot(dpad, ref::pad_forward(pad, v)); }, x,
                  ref::pad_backward(pad, dpad), "zero_pad dx");
}

TEST(ReferenceOps, BatchNormGradients) {
  for (bool relu : {false, true}) {
    BatchNormDesc d;
    d.input = Shape{2, 3, 2, 3};
    d.has_gamma = true;
    d.fused_relu = relu;
    const Vec x = random_vec(d.input.numel(), 5, -2, 2), beta = random_vec(3, 6),
              gamma = random_vec(3, 7, 0.5, 1.5), dy = random_vec(d.input.numel(), 8);
    const auto fwd = ref::batch_norm_forward(d, x, beta, gamma, {}, {});
    const auto g = ref::batch_norm_backward(d, x, gamma, fwd, dy);
    auto loss = [&](const Vec& xv, const Vec& bv, const Vec& gv) {
      return ref::dot(dy, ref::batch_norm_forward(d, xv, bv, gv, {}, {}).y);
    };
    expect_gradient([&](const Vec& v) { return loss(v, beta, gamma); }, x, g.dx, "bn dx");
    expect_gradient([&](const Vec& v) { return loss(x, v, gamma); }, beta, g.dbeta, "bn dbeta");
    expect_gradient([&](const Vec& v) { return loss(x, beta, v); }, gamma, g.dgamma, "bn dgamma");
  }
}

TEST(ReferenceOps, PoolGradients) {
  for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
    Pool2dDesc d;
    d.input = Shape{1, 5, 4, 2};
    d.kind = kind;
    d.stride_h = d.stride_w = 2;
    d.padding = Padding::same;
    const Vec x = random_vec(d.input.numel(), 9), dy = random_vec(d.output().numel(), 10);
    expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::pool2d_forward(d, v)); }, x,
                    ref::pool2d_backward(d, x, dy), "pool dx");
  }
}

TEST(ReferenceOps, DenseAndSoftmaxCrossEntropyGradients) {
  const Vec x = random_vec(2 * 5, 11), w = random_vec(5 * 3, 12), b = random_vec(3, 13),
            dy = random_vec(2 * 3, 14);
  const auto g = ref::dense_backward(2, 5, 3, x, w, dy);
  expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::dense_forward(2, 5, 3, v, w, b)); },
                  x, g.dx, "dense dx");
  expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::dense_forward(2, 5, 3, x, v, b)); },
                  w, g.dw, "dense dw");
  expect_gradient([&](const Vec& v) { return ref::dot(dy, ref::dense_forward(2, 5, 3, x, w, v)); },
                  b, g.db, "dense db");

  SoftmaxCrossEntropyDesc d{3, 4, 0.1f, 0.4f};
  const std::vector<int32_t> labels{2, -1, 0};
  const Vec logits = random_vec(12, 15, -3, 3);
  expect_gradient([&](const Vec& v) { return ref::softmax_xent_forward(d, v, labels); }, logits,
                  ref::softmax_xent_backward(d, logits, labels), "xent dlogits");
  // Known value: uniform logits give log(C) whatever the smoothing.
  EXPECT_NEAR(ref::softmax_xent_forward(d, Vec(12, 0.5), labels), double(d.weight) * std::log(4.0),
              1e-7);
}

}  // namespace
}  // namespace ic
