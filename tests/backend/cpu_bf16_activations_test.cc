// Kernels reading and writing bf16 activations (ops.h's `activations = bf16`, what a bf16
// inference graph compiles) against the double-precision reference. The inputs are rounded to
// bf16 first, so the reference sees exactly what the kernel reads; the bounds are then those of
// bf16 arithmetic:
//   - relu, concat, max pool, casts to f32: exact (no rounding happens);
//   - add, average pools, a cast to bf16: one rounding of the result, |error| <= 2^-8 |y|;
//   - convolution: bf16 weights too (rounded once from f32), sums in f32, one rounding of y:
//     |error| <= 2^-8 |y| + 2^-8 * sum |w||x| (we bound the sum by K, the inputs being in [-1, 1]).
// Where the CPU has no bf16 convolutions, the convolution computes in f32 on the converted
// values, within the same bounds.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::cpu_backend;
using testing::random_vec;
using testing::Vec;

constexpr double kBf16Rounding = 1.0 / 256;  // 2^-8: half an ulp of bf16 relative to 1 is 2^-9

Vec rounded_to_bf16(Vec v) {
  for (double& x : v) x = bf16_to_float(float_to_bf16(static_cast<float>(x)));
  return v;
}

// Runs `desc` forward on `backend` with the activations in `in_type` and the outputs read back
// as `out_type` (each f32 or bf16), params in f32.
class Bf16Run {
 public:
  Bf16Run(Backend& backend, const OpDesc& desc) : backend_(backend) {
    auto kernel = backend.compile(desc);
    EXPECT_TRUE(kernel.ok()) << kernel.status().message();
    if (kernel.ok()) kernel_ = std::move(kernel).value();
  }

  std::vector<Vec> forward(const std::vector<Vec>& inputs, DType in_type,
                           const std::vector<Vec>& params, const std::vector<size_t>& output_sizes,
                           DType out_type) {
    std::vector<Vec> outputs;
    if (!kernel_) return outputs;
    OpBindings b;
    for (const Vec& v : inputs) b.inputs.push_back(upload(v, in_type));
    for (const Vec& v : params) b.params.push_back(upload(v, DType::f32));
    std::vector<void*> out;
    for (size_t n : output_sizes) {
      out.push_back(alloc(n * dtype_size(out_type)));
      b.outputs.push_back(out.back());
    }
    if (kernel_->workspace_bytes()) b.workspace = alloc(kernel_->workspace_bytes());
    if (kernel_->saved_bytes()) b.saved = alloc(kernel_->saved_bytes());
    const Status bound = kernel_->bind(b);
    EXPECT_TRUE(bound.ok()) << bound.message();
    if (!bound.ok()) return outputs;
    kernel_->forward(StepContext{});
    backend_.synchronize();
    for (size_t k = 0; k < out.size(); ++k)
      outputs.push_back(download(out[k], output_sizes[k], out_type));
    return outputs;
  }

 private:
  void* alloc(size_t bytes) {
    buffers_.push_back(backend_.allocate(std::max<size_t>(bytes, 64)).value());
    return buffers_.back().data();
  }
  void* upload(const Vec& v, DType type) {
    void* p = alloc(v.size() * dtype_size(type));
    if (type == DType::bf16) {
      std::vector<uint16_t> bits(v.size());
      for (size_t i = 0; i < v.size(); ++i) bits[i] = float_to_bf16(static_cast<float>(v[i]));
      backend_.upload(p, bits.data(), bits.size() * 2);
    } else {
      std::vector<float> f(v.begin(), v.end());
      backend_.upload(p, f.data(), f.size() * 4);
    }
    return p;
  }
  Vec download(const void* p, size_t n, DType type) {
    Vec out(n);
    if (type == DType::bf16) {
      std::vector<uint16_t> bits(n);
      backend_.download(bits.data(), p, n * 2);
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(bits[i]);
    } else {
      std::vector<float> f(n);
      backend_.download(f.data(), p, n * 4);
      for (size_t i = 0; i < n; ++i) out[i] = f[i];
    }
    return out;
  }

  Backend& backend_;
  std::unique_ptr<OpKernel> kernel_;
  std::vector<DeviceBuffer> buffers_;
};

// |actual - expected| <= atol + rtol |expected| everywhere.
void expect_within(const Vec& actual, const Vec& expected, double atol, double rtol,
                   const char* what) {
  testing::expect_near(actual, expected, atol, rtol, what);
}

const Shape kShape{2, 7, 5, 19};  // odd sizes: vector tails run

TEST(CpuBf16Activations, ReluIsExact) {
  auto backend = cpu_backend();
  const Vec x = rounded_to_bf16(random_vec(kShape.numel(), 1));
  Vec expected = x;
  for (double& v : expected) v = v < 0 ? 0 : v;
  Bf16Run run(*backend, ReluDesc{kShape, DType::bf16});
  auto y = run.forward({x}, DType::bf16, {}, {x.size()}, DType::bf16);
  ASSERT_EQ(y.size(), 1u);
  expect_within(y[0], expected, 0, 0, "relu");
}

TEST(CpuBf16Activations, AddRoundsOnce) {
  auto backend = cpu_backend();
  const Vec a = rounded_to_bf16(random_vec(kShape.numel(), 2));
  const Vec c = rounded_to_bf16(random_vec(kShape.numel(), 3));
  for (bool relu : {false, true}) {
    Vec expected(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      expected[i] = relu ? std::max(a[i] + c[i], 0.0) : a[i] + c[i];
    Bf16Run run(*backend, AddDesc{kShape, relu, DType::bf16});
    auto y = run.forward({a, c}, DType::bf16, {}, {a.size()}, DType::bf16);
    ASSERT_EQ(y.size(), 1u);
    expect_within(y[0], expected, 0, kBf16Rounding, relu ? "add+relu" : "add");
  }
}

TEST(CpuBf16Activations, ConcatIsExact) {
  auto backend = cpu_backend();
  const std::vector<Shape> shapes{{2, 3, 4, 5}, {2, 3, 4, 1}, {2, 3, 4, 32}};
  std::vector<Vec> xs;
  for (size_t k = 0; k < shapes.size(); ++k)
    xs.push_back(rounded_to_bf16(random_vec(shapes[k].numel(), 10 + k)));
  ConcatDesc d{shapes};
  d.activations = DType::bf16;
  Bf16Run run(*backend, d);
  const Vec expected = ref::concat_forward(shapes, xs);
  auto y = run.forward(xs, DType::bf16, {}, {expected.size()}, DType::bf16);
  ASSERT_EQ(y.size(), 1u);
  expect_within(y[0], expected, 0, 0, "concat");
}

TEST(CpuBf16Activations, GlobalAvgPoolSumsInFloat32) {
  auto backend = cpu_backend();
  const Vec x = rounded_to_bf16(random_vec(kShape.numel(), 4));
  Bf16Run run(*backend, GlobalAvgPoolDesc{kShape, DType::bf16});
  const Vec expected = ref::global_avg_pool_forward(kShape, x);
  auto y = run.forward({x}, DType::bf16, {}, {expected.size()}, DType::bf16);
  ASSERT_EQ(y.size(), 1u);
  expect_within(y[0], expected, 1e-6, kBf16Rounding, "global_avg_pool");
}

TEST(CpuBf16Activations, PoolsForwardOnly) {
  auto backend = cpu_backend();
  const Vec x = rounded_to_bf16(random_vec(kShape.numel(), 5));
  for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
    for (int stride : {1, 2}) {
      Pool2dDesc d;
      d.input = kShape;
      d.kind = kind;
      d.stride_h = d.stride_w = stride;
      d.padding = stride == 1 ? Padding::same : Padding::valid;
      d.training = false;
      d.activations = DType::bf16;
      Bf16Run run(*backend, d);
      const Vec expected = ref::pool2d_forward(d, x);
      auto y = run.forward({x}, DType::bf16, {}, {expected.size()}, DType::bf16);
      ASSERT_EQ(y.size(), 1u);
      const bool max = kind == PoolKind::max;
      expect_within(y[0], expected, max ? 0 : 1e-6, max ? 0 : kBf16Rounding,
                    max ? "max_pool" : "avg_pool");
    }
  }
  Pool2dDesc training;
  training.input = kShape;
  training.activations = DType::bf16;
  EXPECT_FALSE(backend->compile(training).ok()) << "bf16 activations are forward only";
}

TEST(CpuBf16Activations, ConvolutionReadsAndWritesBf16) {
  auto backend = cpu_backend();
  struct Case {
    Shape input;
    int64_t filters;
    int k, stride;
    Padding padding;
  };
  const Case cases[] = {{{2, 7, 5, 3}, 4, 3, 1, Padding::same},
                        {{2, 8, 6, 17}, 19, 1, 1, Padding::same},
                        {{1, 9, 9, 16}, 32, 3, 2, Padding::valid}};
  for (const Case& c : cases) {
    for (bool relu : {false, true}) {
      Conv2dDesc d;
      d.input = c.input;
      d.out_channels = c.filters;
      d.kernel_h = d.kernel_w = c.k;
      d.stride_h = d.stride_w = c.stride;
      d.padding = c.padding;
      d.has_bias = true;
      d.training = false;
      d.fused_relu = relu;
      d.constant_weights = true;
      d.compute = DType::bf16;
      d.activations = DType::bf16;
      const Vec x = rounded_to_bf16(random_vec(c.input.numel(), 6));
      const Vec w = random_vec(size_t(c.k * c.k * c.input.c() * c.filters), 7);
      const Vec bias = random_vec(size_t(c.filters), 8);
      // The reference on the weights the kernel multiplies: bf16-rounded where it computes in
      // bf16, else the f32 ones.
      Vec expected =
          ref::conv2d_forward(d, x, backend->has_native_bf16() ? rounded_to_bf16(w) : w, bias);
      if (relu)
        for (double& v : expected) v = std::max(v, 0.0);
      Bf16Run run(*backend, d);
      auto y = run.forward({x}, DType::bf16, {w, bias}, {expected.size()}, DType::bf16);
      ASSERT_EQ(y.size(), 1u);
      const double terms = double(c.k * c.k * c.input.c());
      expect_within(y[0], expected, kBf16Rounding * terms * 1e-2, kBf16Rounding,
                    "conv2d bf16 activations");
    }
  }
}

TEST(CpuBf16Activations, CastsRoundToNearestEven) {
  auto backend = cpu_backend();
  const Vec x = random_vec(1000, 9, -100, 100);
  Bf16Run to_bf16(*backend, CastDesc{Shape{10, 100}, DType::f32, DType::bf16});
  auto y = to_bf16.forward({x}, DType::f32, {}, {x.size()}, DType::bf16);
  ASSERT_EQ(y.size(), 1u);
  expect_within(y[0], rounded_to_bf16(x), 0, 0, "cast f32 -> bf16 (bit for bit)");
  const Vec b = rounded_to_bf16(x);
  Bf16Run to_f32(*backend, CastDesc{Shape{10, 100}, DType::bf16, DType::f32});
  auto back = to_f32.forward({b}, DType::bf16, {}, {b.size()}, DType::f32);
  ASSERT_EQ(back.size(), 1u);
  expect_within(back[0], b, 0, 0, "cast bf16 -> f32");
  EXPECT_FALSE(backend->compile(CastDesc{Shape{4}, DType::f32, DType::i32}).ok());
}

}  // namespace
}  // namespace ic
