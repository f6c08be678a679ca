// Kernels reading and writing bf16 activations (ops.h's `activations = bf16`, what a bf16
// inference graph compiles) against the double-precision reference. The inputs are rounded to
// bf16 first, so the reference sees exactly what the kernel reads; the bounds are then those of
// bf16 arithmetic:
//   - relu, concat, max pool, casts to f32: exact (no rounding happens);
//   - add, average pools, a cast to bf16: one rounding of the result, |error| <= 2^-8 |y|;
//   - convolution: bf16 weights too (rounded once from f32), sums in f32, one rounding of y:
//     |error| <= 2^-8 |y| + 2^-8 * sum |w||x| (we bound the sum by K, the inputs being in [-1, 1]).
// Where the CPU has no bf16 convolutions, the convolution computes in f32 on the converted
// values, within the same bounds; pooling, batch norm and ReLU6 have no bf16 kernels there (no
// AVX-512), and their tests skip, saying so.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "op_harness.h"

namespace ic {
namespace {

using testing::computes_in_bf16;
using testing::cpu_backend;
using testing::random_vec;
using testing::rounded_to_bf16;
using testing::Vec;

// Why the pooling, batch-norm and ReLU6 tests skip on a CPU without AVX-512.
constexpr const char* kNoBf16Kernels =
    "this CPU has no AVX-512: oneDNN builds no bf16 pooling, batch norm or eltwise (ReLU6, "
    "sigmoid, swish) here (the programs keep float32 activations on it)";

constexpr double kBf16Rounding = 1.0 / 256;  // 2^-8: half an ulp of bf16 relative to 1 is 2^-9

// Runs `desc` forward on `backend` with the activations in `in_type` and the outputs read back
// as `out_type` (each f32 or bf16), params in f32.
class Bf16Run {
 public:
  Bf16Run(Backend& backend, const OpDesc& desc) : backend_(backend) {
    auto kernel = backend.compile(desc);
    EXPECT_TRUE(kernel.ok()) << kernel.status().message();
    if (kernel.ok()) kernel_ = std::move(kernel).value();
  }

  const OpKernel& kernel() const { return *kernel_; }

  std::vector<Vec> forward(const std::vector<Vec>& inputs, DType in_type,
                           const std::vector<Vec>& params, const std::vector<size_t>& output_sizes,
                           DType out_type) {
    return run(inputs, in_type, params, {}, output_sizes, out_type, {}).outputs;
  }

  // Forward, then backward when `output_grads` (f32) are given: input and parameter gradients
  // come back (f32, as the graph keeps them). `state`: batch norm's moving statistics.
  struct Results {
    std::vector<Vec> outputs, input_grads, param_grads;
  };
  Results run(const std::vector<Vec>& inputs, DType in_type, const std::vector<Vec>& params,
              const std::vector<Vec>& state, const std::vector<size_t>& output_sizes,
              DType out_type, const std::vector<Vec>& output_grads, uint64_t seed = 0) {
    Results results;
    if (!kernel_) return results;
    OpBindings b;
    for (const Vec& v : inputs) b.inputs.push_back(upload(v, in_type));
    for (const Vec& v : params) b.params.push_back(upload(v, DType::f32));
    for (const Vec& v : state) b.state.push_back(upload(v, DType::f32));
    for (size_t n : output_sizes) b.outputs.push_back(alloc(n * dtype_size(out_type)));
    for (const Vec& v : output_grads) b.output_grads.push_back(upload(v, DType::f32));
    if (!output_grads.empty()) {
      for (const Vec& v : inputs) b.input_grads.push_back(alloc(v.size() * 4));
      for (const Vec& v : params) b.param_grads.push_back(alloc(v.size() * 4));
    }
    if (kernel_->workspace_bytes()) b.workspace = alloc(kernel_->workspace_bytes());
    if (kernel_->saved_bytes()) b.saved = alloc(kernel_->saved_bytes());
    const Status bound = kernel_->bind(b);
    EXPECT_TRUE(bound.ok()) << bound.message();
    if (!bound.ok()) return results;
    const StepContext ctx{seed, 0};
    kernel_->forward(ctx);
    if (!output_grads.empty()) kernel_->backward(ctx);
    backend_.synchronize();
    for (size_t k = 0; k < output_sizes.size(); ++k)
      results.outputs.push_back(download(b.outputs[k], output_sizes[k], out_type));
    for (size_t k = 0; k < b.input_grads.size(); ++k)
      results.input_grads.push_back(download(b.input_grads[k], inputs[k].size(), DType::f32));
    for (size_t k = 0; k < b.param_grads.size(); ++k)
      results.param_grads.push_back(download(b.param_grads[k], params[k].size(), DType::f32));
    return results;
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

// The gradients of ReLU and ReLU6 pass dy exactly where TensorFlow's ReluGrad (y > 0) and
// Relu6Grad (0 < x < 6) do, at the edges too, for f32 and bf16 activations. 5.96875 is the
// largest bf16 below 6. 83 elements: the vectorized loop and its tail both run. Without
// AVX-512, oneDNN has no bf16 eltwise for ReLU6's forward: the other three cases run, then the
// test reports the skipped one.
TEST(CpuBf16Activations, ReluAndRelu6GradientsPassExactlyWhereTensorFlowsDo) {
  auto backend = cpu_backend();
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Vec edges{-1, -0.0, 0, 1e-30, 0.5, 5.96875, 6, 6.5, inf, -inf, nan};
  const Shape shape{1, 1, 1, 83};
  Vec x(shape.numel()), dy(shape.numel());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = edges[(i * 7) % edges.size()];
    dy[i] = 1.0 + static_cast<double>(i);
  }
  bool skipped_relu6_bf16 = false;
  for (DType type : {DType::f32, DType::bf16}) {
    for (bool six : {false, true}) {
      if (six && type == DType::bf16 && !backend->supports_bf16_activations()) {
        skipped_relu6_bf16 = true;
        continue;
      }
      const OpDesc desc = six ? OpDesc(ActivationDesc{shape, Activation::relu6, type})
                              : OpDesc(ReluDesc{shape, type});
      Bf16Run run(*backend, desc);
      const auto r = run.run({x}, type, {}, {}, {x.size()}, type, {dy});
      ASSERT_EQ(r.input_grads.size(), 1u);
      for (size_t i = 0; i < x.size(); ++i) {
        const bool passes = six ? (x[i] > 0 && x[i] < 6) : x[i] > 0;
        ASSERT_EQ(r.input_grads[0][i], passes ? dy[i] : 0.0)
            << (six ? "relu6" : "relu") << " " << dtype_name(type) << " at x=" << x[i];
      }
    }
  }
  if (skipped_relu6_bf16) GTEST_SKIP() << "relu6 in bf16: " << kNoBf16Kernels;
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

// Global average pooling splits by example and by channel blocks (batch 1 too), and
// squeeze-and-excitation's product runs vectorized: several blocks, their tails and batch 1.
// The product of two bf16 values is exact in float, so the bf16 product is that rounded once.
TEST(CpuBf16Activations, GlobalAvgPoolAndScaleChannelsOverChannelBlocks) {
  auto backend = cpu_backend();
  for (const Shape& shape : {Shape{1, 5, 3, 70}, Shape{3, 4, 4, 37}}) {
    SCOPED_TRACE(shape.str());
    const Vec x = rounded_to_bf16(random_vec(shape.numel(), 41));
    const Vec scale = rounded_to_bf16(random_vec(shape.n() * shape.c(), 42));
    Vec product(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t n = i / static_cast<size_t>(shape.h() * shape.w() * shape.c());
      product[i] = x[i] * scale[n * static_cast<size_t>(shape.c()) + i % size_t(shape.c())];
    }
    const Vec pooled = ref::global_avg_pool_forward(shape, x);
    for (DType type : {DType::f32, DType::bf16}) {
      const bool bf16 = type == DType::bf16;
      Bf16Run pool(*backend, GlobalAvgPoolDesc{shape, type});
      auto y = pool.forward({x}, type, {}, {pooled.size()}, type);
      ASSERT_EQ(y.size(), 1u);
      expect_within(y[0], pooled, 1e-6, bf16 ? kBf16Rounding : 1e-6, "global_avg_pool");
      Bf16Run scale_channels(*backend, ChannelScaleDesc{shape, type});
      auto z = scale_channels.forward({x, scale}, type, {}, {x.size()}, type);
      ASSERT_EQ(z.size(), 1u);
      expect_within(z[0], bf16 ? rounded_to_bf16(product) : product, 0, bf16 ? 0 : 1e-7,
                    "scale_channels");
    }
  }
}

TEST(CpuBf16Activations, PoolsForwardOnly) {
  auto backend = cpu_backend();
  if (!backend->supports_bf16_activations()) GTEST_SKIP() << kNoBf16Kernels;
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
}

// Training: bf16 forward, f32 gradients; the reference on the bf16-rounded input.
TEST(CpuBf16Activations, PoolsTrainWithFloat32Gradients) {
  auto backend = cpu_backend();
  if (!backend->supports_bf16_activations()) GTEST_SKIP() << kNoBf16Kernels;
  const Vec x = rounded_to_bf16(random_vec(kShape.numel(), 15));
  for (PoolKind kind : {PoolKind::max, PoolKind::avg}) {
    Pool2dDesc d;
    d.input = kShape;
    d.kind = kind;
    d.stride_h = d.stride_w = 2;
    d.padding = Padding::same;
    d.training = true;
    d.activations = DType::bf16;
    const Vec expected = ref::pool2d_forward(d, x);
    const Vec dy = random_vec(expected.size(), 16);
    Bf16Run run(*backend, d);
    auto r = run.run({x}, DType::bf16, {}, {}, {expected.size()}, DType::bf16, {dy});
    ASSERT_EQ(r.outputs.size(), 1u);
    ASSERT_EQ(r.input_grads.size(), 1u);
    const bool max = kind == PoolKind::max;
    expect_within(r.outputs[0], expected, max ? 0 : 1e-6, max ? 0 : kBf16Rounding,
                  max ? "max_pool y" : "avg_pool y");
    expect_within(r.input_grads[0], ref::pool2d_backward(d, x, dy), 1e-6, 1e-5,
                  max ? "max_pool dx" : "avg_pool dx");
  }
}

// A batch norm on bf16 activations, with gamma unless `gamma` is false (Inception's).
BatchNormDesc bf16_batch_norm(const Shape& shape, bool training, bool relu, bool gamma = true) {
  BatchNormDesc d;
  d.input = shape;
  d.has_gamma = gamma;
  d.fused_relu = relu;
  d.training = training;
  d.activations = DType::bf16;
  return d;
}

// Training batch norm: bf16 x and y, f32 statistics and gradients (backward reads bf16 x and
// recomputes the ReLU's mask: batch_norm_backward.h). The statistics and the gradients are
// those of the bf16-rounded x to f32 precision; y is rounded once.
void train_bf16_batch_norm(Backend& backend, const Shape& shape, bool relu,
                           bool with_gamma = true) {
  const Vec x = rounded_to_bf16(random_vec(shape.numel(), 17));
  const Vec beta = random_vec(size_t(shape.c()), 18);
  const Vec ones(size_t(shape.c()), 1.0), zeros(size_t(shape.c()), 0.0);
  const Vec gamma = with_gamma ? random_vec(size_t(shape.c()), 19, 0.5, 1.5) : ones;
  const BatchNormDesc d = bf16_batch_norm(shape, /*training=*/true, relu, with_gamma);
  const ref::BatchNormResult fwd = ref::batch_norm_forward(d, x, beta, gamma, zeros, ones);
  const Vec dy = random_vec(x.size(), 20);
  const ref::BatchNormGrads grads = ref::batch_norm_backward(d, x, gamma, fwd, dy);
  Bf16Run run(backend, d);
  std::vector<Vec> params{beta};
  if (with_gamma) params.push_back(gamma);
  auto r = run.run({x}, DType::bf16, params, {zeros, ones}, {x.size()}, DType::bf16, {dy});
  ASSERT_EQ(r.outputs.size(), 1u) << shape.str();
  ASSERT_EQ(r.input_grads.size(), 1u) << shape.str();
  ASSERT_EQ(r.param_grads.size(), params.size()) << shape.str();
  const std::string at =
      (relu ? "bn+relu " : "bn ") + std::string(with_gamma ? "" : "no gamma ") + shape.str() + " ";
  expect_within(r.outputs[0], fwd.y, 1e-5, kBf16Rounding, (at + "y").c_str());
  expect_within(r.input_grads[0], grads.dx, 1e-4, 1e-3, (at + "dx").c_str());
  expect_within(r.param_grads[0], grads.dbeta, 1e-4, 1e-4, (at + "dbeta").c_str());
  if (with_gamma)
    expect_within(r.param_grads[1], grads.dgamma, 1e-4, 1e-4, (at + "dgamma").c_str());
}

// The second shape is one where oneDNN's bf16 kernel is a generic loop, so the kernel runs its
// forward in f32 (batch_norm_kernel.cc); 24 and 44 channels leave 8 and 12 past the last
// 16-channel vector; the last shape's 100352 rows make several shares and row blocks.
TEST(CpuBf16Activations, BatchNormTrainsWithFloat32Gradients) {
  auto backend = cpu_backend();
  if (!backend->supports_bf16_activations()) GTEST_SKIP() << kNoBf16Kernels;
  for (const Shape& shape : {kShape, Shape{8, 7, 7, 24}, Shape{3, 5, 9, 44}, Shape{32, 56, 56, 16}})
    for (bool relu : {false, true})
      for (bool gamma : {true, false}) train_bf16_batch_norm(*backend, shape, relu, gamma);
}

// MobileNet v2's and EfficientNet-B0's linear bottlenecks of 24 and 40 channels: oneDNN has
// JIT batch-norm kernels for them in f32 but only a generic loop in bf16 (10x slower), so their
// forward runs in f32 on x widened; the answers are the bf16 ones (checked above at 24).
TEST(CpuBf16Activations, BatchNormForwardRunsNoGenericLoop) {
  auto backend = cpu_backend();
  if (!backend->supports_bf16_activations()) GTEST_SKIP() << kNoBf16Kernels;
  for (bool training : {true, false})
    for (int64_t channels : {24, 40, 32, 144}) {
      auto kernel =
          backend->compile(bf16_batch_norm(Shape{8, 14, 14, channels}, training, /*relu=*/false));
      ASSERT_TRUE(kernel.ok()) << kernel.status().message();
      EXPECT_NE((*kernel)->implementation().find("jit"), std::string::npos)
          << (training ? "training, " : "evaluation, ") << channels
          << " channels: " << (*kernel)->implementation();
    }
  train_bf16_batch_norm(*backend, Shape{8, 7, 7, 40}, /*relu=*/false);
  // Evaluation on the moving statistics, through the float32 escape, with and without ReLU.
  for (bool relu : {false, true}) {
    const BatchNormDesc d = bf16_batch_norm(Shape{4, 7, 7, 24}, /*training=*/false, relu);
    const Vec x = rounded_to_bf16(random_vec(d.input.numel(), 31));
    const Vec beta = random_vec(24, 32), gamma = random_vec(24, 33, 0.5, 1.5);
    const Vec mean = random_vec(24, 34), var = random_vec(24, 35, 0.5, 2.0);
    const Vec expected = ref::batch_norm_forward(d, x, beta, gamma, mean, var).y;
    Bf16Run run(*backend, d);
    auto r = run.run({x}, DType::bf16, {beta, gamma}, {mean, var}, {x.size()}, DType::bf16, {});
    ASSERT_EQ(r.outputs.size(), 1u);
    expect_within(r.outputs[0], expected, 1e-5, kBf16Rounding, relu ? "eval bn+relu" : "eval bn");
  }
}

// The same with ReLU fused at every shape of the Fashion-MNIST Inception v3's batch norms (75x75
// images, depth multiplier 0.25, 64 images per replica; docs/fashion-mnist.md): backward's
// recomputed ReLU mask against the reference's at each shape the model trains at.
TEST(CpuBf16Activations, BatchNormReluTrainsAtTheFashionModelsShapes) {
  auto backend = cpu_backend();
  if (!backend->supports_bf16_activations()) GTEST_SKIP() << kNoBf16Kernels;
  // Listed from the model's graph (build_model at batch 64); every one has ReLU fused.
  const Shape shapes[] = {{64, 37, 37, 16}, {64, 35, 35, 16}, {64, 17, 17, 20}, {64, 15, 15, 48},
                          {64, 7, 7, 16},   {64, 7, 7, 24},   {64, 3, 3, 24},   {64, 3, 3, 32},
                          {64, 3, 3, 40},   {64, 3, 3, 48},   {64, 3, 3, 96},   {64, 1, 1, 32},
                          {64, 1, 1, 48},   {64, 1, 1, 80},   {64, 1, 1, 96},   {64, 1, 1, 112},
                          {64, 1, 1, 192}};
  for (const Shape& shape : shapes) train_bf16_batch_norm(*backend, shape, /*relu=*/true);
}

// Dropout: the same mask as in f32, on bf16 values forward and f32 gradients backward.
TEST(CpuBf16Activations, DropoutKeepsItsMask) {
  auto backend = cpu_backend();
  const Vec x = rounded_to_bf16(random_vec(kShape.numel(), 21));
  const Vec dy = random_vec(x.size(), 22);
  DropoutDesc f32;
  f32.input = kShape;
  f32.keep_prob = 0.8f;
  DropoutDesc bf16 = f32;
  bf16.activations = DType::bf16;
  Bf16Run want(*backend, f32), got(*backend, bf16);
  auto w = want.run({x}, DType::f32, {}, {}, {x.size()}, DType::f32, {dy}, 7);
  auto g = got.run({x}, DType::bf16, {}, {}, {x.size()}, DType::bf16, {dy}, 7);
  ASSERT_EQ(w.outputs.size(), 1u);
  ASSERT_EQ(g.outputs.size(), 1u);
  expect_within(g.outputs[0], w.outputs[0], 0, kBf16Rounding, "dropout y");
  expect_within(g.input_grads[0], w.input_grads[0], 0, 0, "dropout dx");
}

// A training convolution asked to compute in bf16. The activations are bf16 unless
// `activations` says f32 (then x is converted inside, y written in f32).
struct TrainedConv {
  Shape input;
  int64_t filters;
  int kh, kw, stride;
  Padding padding;
  bool bias = true;
  DType activations = DType::bf16;
};

Conv2dDesc training_conv(const TrainedConv& c) {
  Conv2dDesc d = testing::conv_geometry(c.input, c.filters, c.kh, c.kw, c.stride, c.padding);
  d.has_bias = c.bias;
  d.compute = DType::bf16;
  d.activations = c.activations;
  d.training = true;
  return d;
}

// Training convolution: bf16 x and y, f32 gradients. x, w and dy are bf16 values already, so
// where the CPU computes in bf16 only the sums' f32 rounding differs from the reference.
// Training convolutions asked for bf16 compute in bf16 where bf16 outpaces f32 (AMX), else in
// f32 on the widened bf16 activations; IC_BF16_TRAINING_CONVS forces either, so that both run
// on every CPU with bf16 convolutions. Both give the reference's answers within bf16's bounds.
class ScopedTrainingConvs {
 public:
  explicit ScopedTrainingConvs(const char* value) { ::setenv("IC_BF16_TRAINING_CONVS", value, 1); }
  ~ScopedTrainingConvs() { ::unsetenv("IC_BF16_TRAINING_CONVS"); }
  ScopedTrainingConvs(const ScopedTrainingConvs&) = delete;
  ScopedTrainingConvs& operator=(const ScopedTrainingConvs&) = delete;
};

TEST(CpuBf16Activations, TrainingConvolutionsComputeAsTheRuleSays) {
  for (const char* mode : {"bf16", "f32"}) {
    const ScopedTrainingConvs scoped(mode);
    auto backend = cpu_backend();  // reads the variable
    if (!backend->has_native_bf16()) GTEST_SKIP() << kNoBf16Kernels;
    Conv2dDesc d = training_conv({{2, 7, 6, 5}, 6, 3, 3, 1, Padding::same, false});
    auto training = backend->compile(d);
    ASSERT_TRUE(training.ok()) << training.status().message();
    const std::string how = (*training)->implementation();
    EXPECT_EQ(computes_in_bf16(**training), std::string_view(mode) == "bf16")
        << mode << ": " << how;
    d.training = false;  // inference convolutions compute in bf16 either way
    auto inference = backend->compile(d);
    ASSERT_TRUE(inference.ok()) << inference.status().message();
    EXPECT_TRUE(computes_in_bf16(**inference)) << mode;
  }
}

// One training convolution computing in bf16 against the reference: y within bf16's rounding,
// the f32 gradients within 1e-4 relative (the sums run in f32 either way).
void train_one_bf16_convolution(const TrainedConv& c) {
  SCOPED_TRACE(c.input.str() + " " + std::to_string(c.filters) + " filters " +
               std::to_string(c.kh) + "x" + std::to_string(c.kw) + " stride " +
               std::to_string(c.stride) + (c.bias ? " bias" : "") + " in " +
               dtype_name(c.activations));
  auto backend = cpu_backend();
  const Conv2dDesc d = training_conv(c);
  const auto filters = static_cast<size_t>(c.filters);
  const Vec x = rounded_to_bf16(random_vec(d.input.numel(), 23));
  const Vec w = rounded_to_bf16(random_vec(size_t(d.weight_count()), 24));
  const Vec bias = c.bias ? random_vec(filters, 25) : Vec(filters, 0.f);
  const Vec expected = ref::conv2d_forward(d, x, w, bias);
  const Vec dy = rounded_to_bf16(random_vec(expected.size(), 26));
  const ref::ConvGrads grads = ref::conv2d_backward(d, x, w, dy);
  Bf16Run run(*backend, d);
  std::vector<Vec> params{w};
  if (c.bias) params.push_back(bias);
  auto r = run.run({x}, c.activations, params, {}, {expected.size()}, c.activations, {dy});
  ASSERT_EQ(r.outputs.size(), 1u);
  ASSERT_EQ(r.input_grads.size(), 1u);
  ASSERT_EQ(r.param_grads.size(), params.size());
  const double sum_bound = kBf16Rounding * c.kh * c.kw * static_cast<double>(c.input.c());
  const double y_rounding = c.activations == DType::bf16 ? kBf16Rounding : 0;
  expect_within(r.outputs[0], expected, 1e-4 + sum_bound, y_rounding, "conv y");
  expect_within(r.input_grads[0], grads.dx, 1e-4, 1e-4, "conv dx");
  expect_within(r.param_grads[0], grads.dw, 1e-4, 1e-4, "conv dw");
  if (c.bias) expect_within(r.param_grads[1], grads.db, 1e-4, 1e-4, "conv db");
}

// The convolutions of train_one_bf16_convolution's test: each backward form (oneDNN's own, the
// pointwise matrix products, the flipped forward convolution) with and without a bias, odd
// sizes and channel counts, SAME and VALID, square and one-axis kernels.
const TrainedConv kTrainedConvs[] = {
    {{2, 7, 6, 5}, 6, 3, 3, 1, Padding::same},
    {{2, 9, 9, 32}, 64, 1, 1, 1, Padding::same},
    {{2, 17, 17, 48}, 40, 3, 3, 2, Padding::valid},
    {{2, 37, 37, 32}, 32, 3, 3, 1, Padding::same},
    {{3, 5, 7, 13}, 11, 1, 1, 1, Padding::valid, false},
    {{2, 6, 5, 19}, 21, 1, 1, 1, Padding::same, true, DType::f32},
    {{2, 9, 8, 24}, 20, 7, 1, 1, Padding::same, false},
    {{2, 8, 9, 20}, 24, 1, 7, 1, Padding::same, false},
    {{2, 11, 10, 16}, 8, 5, 5, 1, Padding::valid},
    {{2, 9, 11, 17}, 15, 3, 3, 1, Padding::same, true, DType::f32},
};

TEST(CpuBf16Activations, ConvolutionTrainsWithFloat32Gradients) {
  for (const char* mode : {"bf16", "f32"}) {
    SCOPED_TRACE(std::string("IC_BF16_TRAINING_CONVS=") + mode);
    const ScopedTrainingConvs scoped(mode);
    for (const TrainedConv& c : kTrainedConvs) train_one_bf16_convolution(c);
  }
}

// Where a training convolution computes in bf16 on NHWC, a pointwise one takes its gradients
// from matrix products and any other stride-1 one its data gradient from a forward convolution
// (oneDNN 2.6's brgemm kernels); strided ones, and all in float32, keep oneDNN's backward.
TEST(CpuBf16Activations, TrainingConvolutionsTakeTheirBackwardFormsByRule) {
  struct Case {
    int kh, kw, stride;
    const char* in_bf16;  // the implementation's backward form when computing in bf16
  };
  const Case cases[] = {
      {1, 1, 1, " matmul-gradients"},
      {3, 3, 1, " forward-dx"},
      {1, 7, 1, " forward-dx"},
      {3, 3, 2, nullptr},
      {1, 1, 2, nullptr},
  };
  for (const char* mode : {"bf16", "f32"}) {
    const ScopedTrainingConvs scoped(mode);
    auto backend = cpu_backend();
    if (!backend->has_native_bf16()) GTEST_SKIP() << kNoBf16Kernels;
    for (const Case& c : cases) {
      auto kernel = backend->compile(
          training_conv({{2, 9, 9, 16}, 32, c.kh, c.kw, c.stride, Padding::same, false}));
      ASSERT_TRUE(kernel.ok()) << kernel.status().message();
      const std::string how = (*kernel)->implementation();
      const bool bf16 = std::string_view(mode) == "bf16";
      for (const char* form : {" matmul-gradients", " forward-dx"}) {
        const bool expected = bf16 && c.in_bf16 != nullptr && std::string_view(form) == c.in_bf16;
        EXPECT_EQ(how.find(form) != std::string::npos, expected)
            << mode << " " << c.kh << "x" << c.kw << " stride " << c.stride << ": " << how;
      }
    }
  }
}

// One inference convolution (constant weights) reading and writing bf16 activations against
// the reference on the weights it multiplies: bf16-rounded where it computes in bf16 (untimed:
// wherever the CPU has bf16; timed: where bf16 was the faster), else the f32 ones.
struct Bf16ConvCase {
  Shape input;
  int64_t filters;
  int k, stride;
  Padding padding;
};

// The convolution of `c` as a bf16 inference graph compiles it: bias, constant weights, bf16
// compute and activations; timed or not (timing tries float32 on the widened activations too).
Conv2dDesc bf16_inference_conv(const Bf16ConvCase& c, bool timed) {
  Conv2dDesc d;
  d.input = c.input;
  d.out_channels = c.filters;
  d.kernel_h = d.kernel_w = c.k;
  d.stride_h = d.stride_w = c.stride;
  d.padding = c.padding;
  d.has_bias = true;
  d.training = false;
  d.constant_weights = true;
  d.time_algorithms = timed;
  d.compute = DType::bf16;
  d.activations = DType::bf16;
  return d;
}

void infer_one_bf16_convolution(Backend& backend, const Bf16ConvCase& c, bool relu, bool timed) {
  SCOPED_TRACE(c.input.str() + (relu ? " relu" : "") + (timed ? " timed" : ""));
  Conv2dDesc d = bf16_inference_conv(c, timed);
  d.fused_relu = relu;
  const Vec x = rounded_to_bf16(random_vec(c.input.numel(), 6));
  const Vec w = random_vec(size_t(c.k * c.k * c.input.c() * c.filters), 7);
  const Vec bias = random_vec(size_t(c.filters), 8);
  Bf16Run run(backend, d);
  const bool bf16_weights = computes_in_bf16(run.kernel());
  if (!timed) {
    EXPECT_EQ(bf16_weights, backend.has_native_bf16()) << run.kernel().implementation();
  }
  Vec expected = ref::conv2d_forward(d, x, bf16_weights ? rounded_to_bf16(w) : w, bias);
  if (relu)
    for (double& v : expected) v = std::max(v, 0.0);
  auto y = run.forward({x}, DType::bf16, {w, bias}, {expected.size()}, DType::bf16);
  ASSERT_EQ(y.size(), 1u);
  const double terms = double(c.k * c.k * c.input.c());
  expect_within(y[0], expected, kBf16Rounding * terms * 1e-2, kBf16Rounding,
                "conv2d bf16 activations");
}

TEST(CpuBf16Activations, ConvolutionReadsAndWritesBf16) {
  auto backend = cpu_backend();
  const Bf16ConvCase cases[] = {{{2, 7, 5, 3}, 4, 3, 1, Padding::same},
                                {{2, 8, 6, 17}, 19, 1, 1, Padding::same},
                                {{1, 9, 9, 16}, 32, 3, 2, Padding::valid}};
  for (const Bf16ConvCase& c : cases)
    for (bool relu : {false, true})
      for (bool timed : {false, true}) infer_one_bf16_convolution(*backend, c, relu, timed);
}

// A depthwise convolution of a bf16 inference graph: where the CPU has bf16 convolutions it is
// depthwise_bf16_kernel.cc's loop, which multiplies the bf16 activations by the float32
// weights (not rounded) and rounds y once; elsewhere oneDNN's float32 convolution on the
// converted activations. Both are within one bf16 rounding of the reference on the f32
// weights, whatever the activation, fixed or timed.
TEST(CpuBf16Activations, DepthwiseConvolutionMultipliesBf16ByFloat32Weights) {
  auto backend = cpu_backend();
  const Bf16ConvCase cases[] = {{{2, 9, 7, 48}, 48, 3, 1, Padding::same},
                                {{1, 10, 8, 40}, 40, 3, 2, Padding::same},
                                {{2, 7, 7, 32}, 32, 5, 1, Padding::same},
                                {{1, 9, 9, 19}, 19, 5, 2, Padding::valid}};
  uint32_t seed = 40;
  for (const Bf16ConvCase& c : cases)
    for (std::optional<Activation> f :
         {std::optional<Activation>(), std::optional(Activation::relu6),
          std::optional(Activation::swish), std::optional(Activation::sigmoid)})
      for (bool timed : {false, true}) {
        Conv2dDesc d = bf16_inference_conv(c, timed);
        d.groups = c.input.c();
        d.fused_activation = f;
        SCOPED_TRACE(c.input.str() + " k" + std::to_string(c.k) + " s" + std::to_string(c.stride) +
                     (f ? std::string(" ") + activation_name(*f) : "") + (timed ? " timed" : ""));
        const Vec x = rounded_to_bf16(random_vec(c.input.numel(), ++seed, -3, 3));
        const Vec w = random_vec(d.weight_count(), ++seed);
        const Vec bias = random_vec(size_t(d.out_channels), ++seed);
        Bf16Run run(*backend, d);
        // Timed, float32 may win (ties stay float32): then the kernel is oneDNN's in float32.
        const std::string implementation = run.kernel().implementation();
        if (backend->has_native_bf16() && (!timed || computes_in_bf16(run.kernel()))) {
          EXPECT_TRUE(implementation.starts_with("ic:depthwise")) << implementation;
        }
        Vec expected = ref::conv2d_forward(d, x, w, bias);
        if (f) expected = ref::activation_forward(*f, expected);
        auto y = run.forward({x}, DType::bf16, {w, bias}, {expected.size()}, DType::bf16);
        ASSERT_EQ(y.size(), 1u);
        // One rounding of y, float sums of k*k terms of at most 3, and exp's approximation.
        expect_within(y[0], expected, 1e-4, kBf16Rounding, "depthwise conv2d bf16 activations");
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
