// BatchNorm (training/inference, beta only / beta+gamma, fused ReLU) and max/avg pooling on
// the CPU backend against the double-precision references.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_common.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::cpu_backend;
using testing::expect_near;
using testing::OpHarness;
using testing::OpRun;
using testing::random_vec;
using testing::Vec;

OpRun batch_norm_run(const BatchNormDesc& d, uint32_t seed) {
  const int64_t C = d.input.c();
  OpRun run;
  run.inputs = {random_vec(d.input.numel(), seed, -2, 3)};
  run.params = {random_vec(C, seed + 1)};
  if (d.has_gamma) run.params.push_back(random_vec(C, seed + 2, 0.5, 1.5));
  run.state = {random_vec(C, seed + 3), random_vec(C, seed + 4, 0.5, 2)};
  run.output_sizes = {size_t(d.input.numel())};
  if (d.training) run.output_grads = {random_vec(d.input.numel(), seed + 5)};
  return run;
}

TEST(CpuBatchNorm, TrainingMatchesReferenceAndUpdatesMovingStatistics) {
  auto backend = cpu_backend();
  uint32_t seed = 200;
  for (bool gamma : {false, true}) {
    for (bool relu : {false, true}) {
      BatchNormDesc d;
      d.input = Shape{2, 7, 5, 19};
      d.has_gamma = gamma;
      d.fused_relu = relu;
      SCOPED_TRACE(std::string(gamma ? "gamma" : "beta only") + (relu ? " +relu" : ""));
      OpHarness h(*backend, d);
      OpRun run = batch_norm_run(d, seed += 10);
      h.run(run);
      const Vec g = gamma ? run.params[1] : Vec();
      const auto fwd =
          ref::batch_norm_forward(d, run.inputs[0], run.params[0], g, run.state[0], run.state[1]);
      expect_near(run.outputs[0], fwd.y, 1e-4, 1e-4, "bn y");
      const double n = 2 * 7 * 5;
      Vec mean(19), var(19);
      for (int c = 0; c < 19; ++c) {
        mean[c] = run.state[0][c] * d.decay + fwd.mean[c] * (1 - d.decay);
        var[c] = run.state[1][c] * d.decay + fwd.variance[c] * n / (n - 1) * (1 - d.decay);
      }
      expect_near(run.state_after[0], mean, 1e-6, 1e-5, "moving mean");
      expect_near(run.state_after[1], var, 1e-6, 1e-5, "moving variance");
      const auto grads = ref::batch_norm_backward(d, run.inputs[0], g, fwd, run.output_grads[0]);
      expect_near(run.input_grads[0], grads.dx, 1e-4, 1e-3, "bn dx");
      expect_near(run.param_grads[0], grads.dbeta, 1e-4, 1e-4, "bn dbeta");
      if (gamma) expect_near(run.param_grads[1], grads.dgamma, 1e-4, 1e-4, "bn dgamma");
    }
  }
}

TEST(CpuBatchNorm, FiniteDifferenceGradients) {
  auto backend = cpu_backend();
  BatchNormDesc d;
  d.input = testing::kOddShape;
  d.has_gamma = true;
  OpHarness h(*backend, d);
  OpRun run = batch_norm_run(d, 9);
  h.run(run);
  testing::expect_backend_gradient(h, run, false, 0, 1e-2, 2e-3, 2e-2);
  testing::expect_backend_gradient(h, run, true, 0, 1e-2, 2e-3, 1e-2, 3);
  testing::expect_backend_gradient(h, run, true, 1, 1e-2, 2e-3, 1e-2, 3);
}

TEST(CpuBatchNorm, InferenceUsesMovingStatistics) {
  auto backend = cpu_backend();
  for (bool relu : {false, true}) {
    BatchNormDesc d;
    d.input = testing::kOddShape;
    d.training = false;
    d.fused_relu = relu;
    OpHarness h(*backend, d);
    EXPECT_EQ(h.kernel().saved_bytes(), 0u);
    OpRun run = batch_norm_run(d, 300);
    h.run(run);
    const auto fwd =
        ref::batch_norm_forward(d, run.inputs[0], run.params[0], Vec(), run.state[0], run.state[1]);
    expect_near(run.outputs[0], fwd.y, 1e-5, 1e-5, "bn inference y");
    EXPECT_EQ(run.state_after, run.state);
  }
}

struct PoolCase {
  Shape input;
  PoolKind kind;
  int k, stride;
  Padding padding;
};

TEST(CpuPool, MatchesReferenceForwardAndBackward) {
  auto backend = cpu_backend();
  const PoolCase cases[] = {
      {{2, 7, 5, 3}, PoolKind::max, 3, 2, Padding::valid},
      {{2, 7, 5, 3}, PoolKind::max, 3, 2, Padding::same},
      {{2, 8, 6, 5}, PoolKind::max, 3, 2, Padding::same},
      {{2, 7, 5, 3}, PoolKind::avg, 3, 1, Padding::same},  // edge windows average fewer inputs
      {{2, 8, 6, 5}, PoolKind::avg, 3, 2, Padding::same},
      {{2, 8, 8, 4}, PoolKind::avg, 8, 1, Padding::valid},
      {{1, 7, 7, 3}, PoolKind::avg, 5, 3, Padding::valid},
      // 8 channels and more: the vector loops (pool_loops.h) where the CPU has AVX2, with the
      // channels past the last multiple of 8 in the plain loop.
      {{2, 9, 8, 19}, PoolKind::max, 3, 2, Padding::same},
      {{2, 9, 8, 19}, PoolKind::max, 3, 1, Padding::same},
      {{3, 10, 9, 16}, PoolKind::max, 3, 2, Padding::valid},
      {{2, 9, 8, 19}, PoolKind::avg, 3, 1, Padding::same},
      {{3, 10, 9, 16}, PoolKind::avg, 3, 2, Padding::same},
      {{1, 11, 10, 8}, PoolKind::max, 2, 3, Padding::valid},  // rows no window reaches
      {{1, 11, 10, 8}, PoolKind::avg, 2, 3, Padding::valid},
  };
  uint32_t seed = 400;
  for (const PoolCase& c : cases) {
    Pool2dDesc d;
    d.input = c.input;
    d.kind = c.kind;
    d.kernel_h = d.kernel_w = c.k;
    d.stride_h = d.stride_w = c.stride;
    d.padding = c.padding;
    SCOPED_TRACE(std::string(c.kind == PoolKind::max ? "max " : "avg ") + c.input.str() + " k" +
                 std::to_string(c.k) + " s" + std::to_string(c.stride) +
                 (c.padding == Padding::same ? " SAME" : " VALID"));
    OpHarness h(*backend, d);
    OpRun run;
    run.inputs = {random_vec(c.input.numel(), seed += 10)};
    const int64_t out = d.output().numel();
    run.output_sizes = {size_t(out)};
    run.output_grads = {random_vec(out, seed + 1)};
    h.run(run);
    expect_near(run.outputs[0], ref::pool2d_forward(d, run.inputs[0]), 1e-6, 1e-5, "pool y");
    expect_near(run.input_grads[0], ref::pool2d_backward(d, run.inputs[0], run.output_grads[0]),
                1e-6, 1e-5, "pool dx");
    if (c.kind == PoolKind::avg)
      testing::expect_backend_gradient(h, run, false, 0, 1e-2, 1e-4, 1e-2, 4);
  }
}

// Ties: each window's gradient goes to its first maximum in row-major order, as the reference
// (and TF) route it. The inputs take 3 values, so most windows hold several maxima.
TEST(CpuPool, MaxPoolingRoutesTiesToTheFirstMaximum) {
  auto backend = cpu_backend();
  for (const int64_t channels : {5, 16, 21}) {
    Pool2dDesc d;
    d.input = Shape{2, 9, 8, channels};
    d.kind = PoolKind::max;
    d.kernel_h = d.kernel_w = 3;
    d.stride_h = d.stride_w = 2;
    d.padding = Padding::same;
    SCOPED_TRACE(d.input.str());
    OpHarness h(*backend, d);
    // Our loops without oneDNN's AVX-512 kernels, oneDNN's pooling with them.
    EXPECT_EQ(h.kernel().implementation() == "pool loops", !cpu::onednn_runs_avx512());
    OpRun run;
    run.inputs = {random_vec(d.input.numel(), 600)};
    for (double& v : run.inputs[0]) v = std::round(v);  // -1, 0 or 1
    const int64_t out = d.output().numel();
    run.output_sizes = {size_t(out)};
    run.output_grads = {random_vec(out, 601)};
    h.run(run);
    expect_near(run.outputs[0], ref::pool2d_forward(d, run.inputs[0]), 0, 0, "pool y");
    expect_near(run.input_grads[0], ref::pool2d_backward(d, run.inputs[0], run.output_grads[0]),
                1e-6, 1e-5, "pool dx");
  }
}

}  // namespace
}  // namespace ic
