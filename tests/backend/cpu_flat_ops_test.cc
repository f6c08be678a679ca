// The flat arena methods of the CPU backend against hand-written TF1 formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::cpu_backend;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  const auto v = testing::random_vec(n, seed);
  return std::vector<float>(v.begin(), v.end());
}

TEST(CpuFlatOps, AllocateIsAlignedAndMemoryOpsRoundTrip) {
  auto backend = cpu_backend();
  EXPECT_NE(backend->description().find("oneDNN"), std::string::npos);
  for (size_t count : {size_t{1}, size_t{7}, size_t{100003}}) {
    auto a = backend->allocate(count * 4);
    auto b = backend->allocate(count * 4);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % 64, 0u);
    const std::vector<float> host = random_floats(count, 1);
    backend->upload(a->data(), host.data(), count * 4);
    backend->copy(b->data(), a->data(), count * 4);
    std::vector<float> back(count);
    backend->download(back.data(), b->data(), count * 4);
    EXPECT_EQ(back, host);
    backend->fill(b->as<float>(), 2.5f, count);
    backend->download(back.data(), b->data(), count * 4);
    for (float v : back) ASSERT_EQ(v, 2.5f);
  }
}

TEST(CpuFlatOps, AddAxpySumSquares) {
  auto backend = cpu_backend();
  const size_t n = 70001;  // large enough to run threaded, odd to test the chunk edges
  std::vector<float> x = random_floats(n, 2), y = random_floats(n, 3);
  std::vector<float> y1 = y, y2 = y;
  backend->add_inplace(y1.data(), x.data(), n);
  backend->axpy(-0.75f, x.data(), y2.data(), n);
  double expected_sq = 0.0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(y1[i], y[i] + x[i]);
    ASSERT_FLOAT_EQ(y2[i], y[i] + -0.75f * x[i]);
    expected_sq += static_cast<double>(x[i]) * x[i];
  }
  float sq = 0.f;
  backend->sum_squares(x.data(), n, &sq);
  EXPECT_NEAR(sq, expected_sq, 1e-6 * expected_sq);
  backend->sum_squares(x.data(), 3, &sq);
  EXPECT_FLOAT_EQ(
      sq, static_cast<float>(static_cast<double>(x[0]) * x[0] + static_cast<double>(x[1]) * x[1] +
                             static_cast<double>(x[2]) * x[2]));
}

// TF1 ApplyRMSProp over three steps, in double, from the optimizer arithmetic as
// train/optimizer.cc composes it.
TEST(CpuFlatOps, RmspropMatchesTf1Formula) {
  auto backend = cpu_backend();
  const size_t n = 40000;
  std::vector<float> p = random_floats(n, 4), ms(n, 1.f), mom(n, 0.f);
  std::vector<double> rp(p.begin(), p.end()), rms(n, 1.0), rmom(n, 0.0);
  const double decay = 0.9, momentum = 0.9, eps = 1.0;
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = random_floats(n, 10 + step);
    const float lr = 0.165f / (step + 1);
    backend->scale_add_square(ms.data(), 0.9f, 1.f - 0.9f, g.data(), n);
    backend->scale_add_over_root(mom.data(), 0.9f, lr, g.data(), ms.data(), {1.f, 1.f, 0.f}, n);
    backend->scale_add(p.data(), 1.f, -1.f, mom.data(), n);
    for (size_t i = 0; i < n; ++i) {
      rms[i] = decay * rms[i] + (1 - decay) * g[i] * g[i];
      rmom[i] = momentum * rmom[i] + lr * g[i] / std::sqrt(rms[i] + eps);
      rp[i] -= rmom[i];
    }
  }
  for (size_t i = 0; i < n; i += 97) {
    ASSERT_NEAR(ms[i], rms[i], 1e-6);
    ASSERT_NEAR(mom[i], rmom[i], 1e-6);
    ASSERT_NEAR(p[i], rp[i], 1e-6);
  }
}

TEST(CpuFlatOps, MomentumSgdAndEma) {
  auto backend = cpu_backend();
  const size_t n = 33333;
  std::vector<float> p = random_floats(n, 5), acc(n, 0.f), q = p, shadow = p;
  std::vector<double> rp(p.begin(), p.end()), racc(n, 0.0), rq = rp, rshadow = rp;
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = random_floats(n, 20 + step);
    backend->scale_add(acc.data(), 0.9f, 1.f, g.data(), n);  // momentum
    backend->scale_add(p.data(), 1.f, -0.1f, acc.data(), n);
    backend->scale_add(q.data(), 1.f, -0.05f, g.data(), n);  // sgd
    backend->ema_update(shadow.data(), p.data(), n, 0.995f);
    for (size_t i = 0; i < n; ++i) {
      racc[i] = 0.9 * racc[i] + g[i];
      rp[i] -= 0.1 * racc[i];
      rq[i] -= 0.05 * g[i];
      rshadow[i] -= (1 - 0.995) * (rshadow[i] - p[i]);
    }
  }
  for (size_t i = 0; i < n; i += 31) {
    ASSERT_NEAR(acc[i], racc[i], 1e-5);
    ASSERT_NEAR(p[i], rp[i], 1e-5);
    ASSERT_NEAR(q[i], rq[i], 1e-6);
    ASSERT_NEAR(shadow[i], rshadow[i], 1e-6);
  }
}

// The optimizer arithmetic is its formula in float32, left to right, bit for bit, whether the
// range runs on one thread or is split over several.
TEST(CpuFlatOps, OptimizerArithmeticIsItsFormulaBitForBit) {
  auto backend = cpu_backend();
  for (size_t n : {size_t{5}, size_t{70001}}) {
    const std::vector<float> x = random_floats(n, 30), y = random_floats(n, 31);
    std::vector<float> z = random_floats(n, 32);
    for (float& v : z) v = std::fabs(v);
    const float a = 0.9f, b = -0.0123f;
    const RootDenominator rms{1.f, 1.f, 0.f}, adam{0.f, 0.3f, 1e-8f};
    std::vector<float> y1 = y, y2 = y, y3 = y, y4 = y;
    backend->scale_add(y1.data(), a, b, x.data(), n);
    backend->scale_add_square(y2.data(), a, b, x.data(), n);
    backend->scale_add_over_root(y3.data(), a, b, x.data(), z.data(), rms, n);
    backend->scale_add_over_root(y4.data(), a, b, x.data(), z.data(), adam, n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(y1[i], a * y[i] + b * x[i]) << i;
      ASSERT_EQ(y2[i], a * y[i] + b * x[i] * x[i]) << i;
      ASSERT_EQ(y3[i], a * y[i] + b * x[i] / std::sqrt(z[i] + 1.f)) << i;
      ASSERT_EQ(y4[i], a * y[i] + b * x[i] / (std::sqrt(z[i]) / 0.3f + 1e-8f)) << i;
    }
  }
}

TEST(CpuFlatOps, SumSquaresPerRange) {
  auto backend = cpu_backend();
  const size_t n = 100000;
  const std::vector<float> x = random_floats(n, 33);
  const std::vector<FlatRange> ranges = {{0, 1}, {1, 70000}, {70001, 0}, {70001, 29999}, {5, 3}};
  std::vector<double> sums(ranges.size(), -1.0);
  backend->sum_squares_per_range(x.data(), ranges, sums.data());
  for (size_t r = 0; r < ranges.size(); ++r) {
    double expected = 0.0;
    for (size_t i = 0; i < ranges[r].count; ++i) {
      expected += static_cast<double>(x[ranges[r].offset + i]) * x[ranges[r].offset + i];
    }
    EXPECT_NEAR(sums[r], expected, 1e-12 * (1 + expected)) << r;
  }
  EXPECT_EQ(sums[2], 0.0);
}

TEST(CpuFlatOps, RejectsNegativeThreadCount) {
  BackendOptions options;
  options.num_threads = -1;
  EXPECT_FALSE(make_cpu_backend(options).ok());
}

}  // namespace
}  // namespace ic
