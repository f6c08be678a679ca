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
