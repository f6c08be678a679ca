// The CUDA backend's memory calls, flat arena arithmetic and optimizers against the CPU
// backend, and step capture (CUDA graphs) against plain launches. Skipped visibly
// ("skipped: no GPU") where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda_test_util.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::random_vec;

std::vector<float> floats(size_t n, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  const testing::Vec v = random_vec(n, seed, lo, hi);
  return std::vector<float>(v.begin(), v.end());
}

// Device copies of host arrays on one backend, read back on demand.
class Arrays {
 public:
  explicit Arrays(Backend& backend) : backend_(backend) {}
  float* add(const std::vector<float>& host) {
    auto buf = backend_.allocate(host.size() * sizeof(float));
    EXPECT_TRUE(buf.ok());
    buffers_.push_back(std::move(buf).value());
    backend_.upload(buffers_.back().data(), host.data(), host.size() * sizeof(float));
    return buffers_.back().as<float>();
  }
  std::vector<float> get(const float* p, size_t n) {
    std::vector<float> host(n);
    backend_.download(host.data(), p, n * sizeof(float));
    return host;
  }

 private:
  Backend& backend_;
  std::vector<DeviceBuffer> buffers_;
};

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, float tol,
                  const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_TRUE(std::isfinite(cpu[i])) << what << "[" << i << "] is " << cpu[i] << " on the CPU";
    ASSERT_NEAR(gpu[i], cpu[i], tol * (1.f + std::abs(cpu[i]))) << what << "[" << i << "]";
  }
}

class CudaFlat : public ::testing::Test {
 protected:
  void SetUp() override {
    IC_CUDA_BACKEND_OR_SKIP(gpu_);
    cpu_ = testing::cpu_backend();
  }
  std::unique_ptr<Backend> gpu_, cpu_;
};

TEST_F(CudaFlat, DescribesItselfAsCuda) {
  EXPECT_EQ(gpu_->kind(), DeviceKind::cuda);
  EXPECT_NE(gpu_->description().find("cuda:0"), std::string::npos) << gpu_->description();
}

TEST_F(CudaFlat, BadDeviceIndexIsAClearError) {
  BackendOptions options;
  options.kind = DeviceKind::cuda;
  options.device_index = 999;
  auto backend = make_cuda_backend(options);
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("cuda:999"), std::string::npos);
}

TEST_F(CudaFlat, CopyFillAddAxpySumSquares) {
  const size_t n = 100003;  // not a multiple of any block size
  const auto x = floats(n, 1), y = floats(n, 2);
  std::vector<float> results[2];
  float sums[2];
  Backend* backends[2] = {cpu_.get(), gpu_.get()};
  for (int b = 0; b < 2; ++b) {
    Arrays a(*backends[b]);
    float* dx = a.add(x);
    float* dy = a.add(y);
    float* tmp = a.add(std::vector<float>(n, 0.f));
    float* sum = a.add({0.f});
    backends[b]->copy(tmp, dx, n * sizeof(float));
    backends[b]->add_inplace(dy, tmp, n);
    backends[b]->axpy(-0.25f, dx, dy, n);
    backends[b]->fill(tmp, 3.f, n / 2);
    backends[b]->add_inplace(dy, tmp, n / 2);
    backends[b]->sum_squares(dy, n, sum);
    results[b] = a.get(dy, n);
    sums[b] = a.get(sum, 1)[0];
  }
  expect_close(results[1], results[0], 1e-6f, "y");
  EXPECT_NEAR(sums[1], sums[0], 1e-5 * sums[0]);
  ASSERT_TRUE(gpu_->status().ok()) << gpu_->status().message();
}

TEST_F(CudaFlat, OptimizersAndEmaFollowTheCpu) {
  const size_t n = 5000;
  const auto p = floats(n, 10), g = floats(n, 11), s1 = floats(n, 12, 0.0, 1.0), s2 = floats(n, 13);
  std::vector<float> out[2][6];
  Backend* backends[2] = {cpu_.get(), gpu_.get()};
  for (int b = 0; b < 2; ++b) {
    Arrays a(*backends[b]);
    float* dp = a.add(p);
    float* dg = a.add(g);
    float* d1 = a.add(s1);
    float* d2 = a.add(s2);
    float* shadow = a.add(s2);
    float* dv = a.add(s1);
    float* dm = a.add(s2);  // momentum's accumulator: d1 stays RMSProp's mean square (>= 0)
    Backend& be = *backends[b];
    const float lr = 0.045f;
    for (int step = 0; step < 3; ++step) {
      // RMSProp, momentum and SGD as train/optimizer.cc composes them.
      be.scale_add_square(d1, 0.9f, 1.f - 0.9f, dg, n);
      be.scale_add_over_root(d2, 0.9f, lr, dg, d1, {1.f, 1.f, 0.f}, n);
      be.scale_add(dp, 1.f, -1.f, d2, n);
      be.scale_add(dm, 0.9f, 1.f, dg, n);
      be.scale_add(dp, 1.f, -lr, dm, n);
      be.scale_add(dp, 1.f, -lr, dg, n);
      // Adam's: the second moment, and the step with the epsilon outside the root.
      be.scale_add_square(dv, 0.999f, 1.f - 0.999f, dg, n);
      be.scale_add_over_root(dp, 0.99f, -lr, dm, dv, {0.f, 0.3f, 1e-8f}, n);
      be.ema_update(shadow, dp, n, 0.995f);
    }
    out[b][0] = a.get(dp, n);
    out[b][1] = a.get(d1, n);
    out[b][2] = a.get(d2, n);
    out[b][3] = a.get(shadow, n);
    out[b][4] = a.get(dv, n);
    out[b][5] = a.get(dm, n);
  }
  const char* names[6] = {"params", "mean square",   "RMSProp momentum",
                          "ema",    "second moment", "momentum"};
  for (int k = 0; k < 6; ++k) expect_close(out[1][k], out[0][k], 1e-6f, names[k]);
}

TEST_F(CudaFlat, SumSquaresPerRangeFollowsTheCpu) {
  const size_t n = 300000;
  const auto x = floats(n, 14);
  const std::vector<FlatRange> ranges = {{0, 1}, {1, 200000}, {200001, 0}, {200001, 99999}};
  std::vector<double> sums[2];
  Backend* backends[2] = {cpu_.get(), gpu_.get()};
  for (int b = 0; b < 2; ++b) {
    Arrays a(*backends[b]);
    const float* dx = a.add(x);
    sums[b].assign(ranges.size(), -1.0);
    backends[b]->sum_squares_per_range(dx, ranges, sums[b].data());
  }
  for (size_t r = 0; r < ranges.size(); ++r) {
    EXPECT_NEAR(sums[1][r], sums[0][r], 1e-12 * (1 + sums[0][r])) << r;
  }
  ASSERT_TRUE(gpu_->status().ok()) << gpu_->status().message();
}

// A captured dropout -> conv -> relu step replayed with a seed gives what plain launches
// with that seed give, bit for bit.
TEST_F(CudaFlat, CapturedStepMatchesPlainLaunches) {
  ASSERT_TRUE(gpu_->supports_capture());
  const Shape s{2, 6, 6, 4};
  Conv2dDesc conv;
  conv.input = s;
  conv.out_channels = 5;
  conv.kernel_h = conv.kernel_w = 3;
  conv.stride_h = conv.stride_w = 2;
  conv.padding = Padding::same;
  const Shape out = conv.output();
  auto dropout = gpu_->compile(DropoutDesc{s, 0.8f, true});
  auto conv_k = gpu_->compile(conv);
  auto relu = gpu_->compile(ReluDesc{out});
  ASSERT_TRUE(dropout.ok() && conv_k.ok() && relu.ok());

  Arrays a(*gpu_);
  float* x = a.add(floats(s.numel(), 20));
  float* dropped = a.add(std::vector<float>(s.numel()));
  float* w = a.add(floats(3 * 3 * 4 * 5, 21));
  float* y = a.add(std::vector<float>(out.numel()));
  float* z = a.add(std::vector<float>(out.numel()));
  float* ws = a.add(std::vector<float>((*conv_k)->workspace_bytes() / 4 + 1));
  OpBindings bd, bc, br;
  bd.inputs = {x};
  bd.outputs = {dropped};
  bc.inputs = {dropped};
  bc.outputs = {y};
  bc.params = {w};
  bc.workspace = ws;
  br.inputs = {y};
  br.outputs = {z};
  ASSERT_TRUE((*dropout)->bind(bd).ok());
  ASSERT_TRUE((*conv_k)->bind(bc).ok());
  ASSERT_TRUE((*relu)->bind(br).ok());
  auto step = [&](const StepContext& ctx) {
    (*dropout)->forward(ctx);
    (*conv_k)->forward(ctx);
    (*relu)->forward(ctx);
  };

  std::vector<float> plain[2];
  for (int i = 0; i < 2; ++i) {
    step(StepContext{uint64_t(7 + i), i});
    plain[i] = a.get(z, out.numel());
  }
  ASSERT_TRUE(gpu_->begin_capture().ok());
  step(StepContext{0, 0});
  const Status captured = gpu_->end_capture();
  ASSERT_TRUE(captured.ok()) << captured.message();
  for (int i = 1; i >= 0; --i) {
    ASSERT_TRUE(gpu_->replay(StepContext{uint64_t(7 + i), i}).ok());
    EXPECT_EQ(a.get(z, out.numel()), plain[i]) << "seed " << 7 + i;
  }
  EXPECT_NE(plain[0], plain[1]);  // the seed does reach the captured dropout
  ASSERT_TRUE(gpu_->status().ok()) << gpu_->status().message();
}

}  // namespace
}  // namespace ic
