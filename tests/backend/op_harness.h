// Runs one compiled op of a backend on host data: uploads inputs/params/state, binds
// planned-looking buffers (workspace, saved), runs forward (and backward when output
// gradients are given) and downloads everything back as doubles.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"
#include "reference/reference_ops.h"

namespace ic::testing {

using ref::Vec;

inline std::unique_ptr<Backend> cpu_backend() {
  BackendOptions options;
  options.num_threads = 2;
  auto backend = make_cpu_backend(options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return std::move(backend).value();
}

inline Vec random_vec(size_t n, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double& x : v) x = static_cast<float>(dist(gen));  // exactly representable in f32
  return v;
}

// Each value rounded to the nearest bfloat16, as a kernel computing in bf16 reads it.
inline Vec rounded_to_bf16(Vec v) {
  for (double& x : v) x = bf16_to_float(float_to_bf16(static_cast<float>(x)));
  return v;
}

// Whether a convolution kernel is its layer's bf16 choice: its implementation() ends " bf16"
// then (the CPU backend's; a timed bf16 convolution may have chosen float32). It multiplies in
// bf16, except a depthwise one on bf16 activations, which multiplies them by float32 weights.
inline bool computes_in_bf16(const OpKernel& kernel) {
  return kernel.implementation().ends_with(" bf16");
}

struct OpRun {
  // In.
  std::vector<Vec> inputs, params, state;
  std::vector<int32_t> labels;  // appended as the last input when not empty
  std::vector<size_t> output_sizes;
  std::vector<Vec> output_grads;      // empty: forward only
  std::vector<bool> skip_input_grad;  // true: bind a null input gradient
  StepContext ctx;
  // Out.
  std::vector<Vec> outputs, input_grads, param_grads, state_after;
};

class OpHarness {
 public:
  OpHarness(Backend& backend, const OpDesc& desc) : backend_(backend) {
    auto kernel = backend.compile(desc);
    EXPECT_TRUE(kernel.ok()) << kernel.status().message();
    if (kernel.ok()) kernel_ = std::move(kernel).value();
  }
  // A kernel made otherwise (one implementation of a backend's, asked for by name), whose
  // buffers `backend` allocates.
  OpHarness(Backend& backend, std::unique_ptr<OpKernel> kernel)
      : backend_(backend), kernel_(std::move(kernel)) {}
  bool ok() const { return kernel_ != nullptr; }
  OpKernel& kernel() { return *kernel_; }

  // Binds fresh buffers filled from `run` and runs forward (+ backward).
  void run(OpRun& run) {
    ASSERT_TRUE(ok());
    buffers_.clear();
    OpBindings b;
    for (const Vec& v : run.inputs) b.inputs.push_back(upload(v));
    if (!run.labels.empty()) {
      void* p = alloc(run.labels.size() * 4);
      backend_.upload(p, run.labels.data(), run.labels.size() * 4);
      b.inputs.push_back(p);
    }
    for (const Vec& v : run.params) b.params.push_back(upload(v));
    for (const Vec& v : run.state) b.state.push_back(upload(v));
    for (size_t n : run.output_sizes) b.outputs.push_back(alloc(n * 4));
    b.saved = kernel_->saved_bytes() ? alloc(kernel_->saved_bytes()) : nullptr;
    b.workspace = kernel_->workspace_bytes() ? alloc(kernel_->workspace_bytes()) : nullptr;
    const bool backward = !run.output_grads.empty();
    if (backward) {
      for (const Vec& v : run.output_grads) b.output_grads.push_back(upload(v));
      for (size_t i = 0; i < run.inputs.size(); ++i) {
        const bool skip = i < run.skip_input_grad.size() && run.skip_input_grad[i];
        b.input_grads.push_back(skip ? nullptr : alloc(run.inputs[i].size() * 4));
      }
      if (!run.labels.empty()) b.input_grads.push_back(nullptr);
      for (const Vec& v : run.params) b.param_grads.push_back(alloc(v.size() * 4));
    }
    const Status bound = kernel_->bind(b);
    ASSERT_TRUE(bound.ok()) << bound.message();
    kernel_->forward(run.ctx);
    if (b.workspace) {  // the graph shares the workspace between ops: nothing may survive in it
      std::vector<float> nan(kernel_->workspace_bytes() / 4, std::nanf(""));
      backend_.upload(b.workspace, nan.data(), nan.size() * 4);
    }
    if (backward) kernel_->backward(run.ctx);
    backend_.synchronize();

    run.outputs.clear();
    run.input_grads.clear();
    run.param_grads.clear();
    run.state_after.clear();
    for (size_t i = 0; i < run.output_sizes.size(); ++i)
      run.outputs.push_back(download(b.outputs[i], run.output_sizes[i]));
    for (size_t i = 0; i < run.state.size(); ++i)
      run.state_after.push_back(download(b.state[i], run.state[i].size()));
    if (backward) {
      for (size_t i = 0; i < run.inputs.size(); ++i)
        run.input_grads.push_back(
            b.input_grads[i] ? download(b.input_grads[i], run.inputs[i].size()) : Vec());
      for (size_t i = 0; i < run.params.size(); ++i)
        run.param_grads.push_back(download(b.param_grads[i], run.params[i].size()));
    }
  }

 private:
  void* alloc(size_t bytes) {
    auto buf = backend_.allocate(bytes);
    EXPECT_TRUE(buf.ok());
    buffers_.push_back(std::move(buf).value());
    // Poison so a kernel that forgets to write its output is caught.
    std::vector<float> nan(bytes / 4, std::nanf(""));
    backend_.upload(buffers_.back().data(), nan.data(), nan.size() * 4);
    return buffers_.back().data();
  }
  void* upload(const Vec& v) {
    void* p = alloc(v.size() * 4);
    std::vector<float> f(v.begin(), v.end());
    backend_.upload(p, f.data(), f.size() * 4);
    return p;
  }
  Vec download(const void* p, size_t n) {
    std::vector<float> f(n);
    backend_.download(f.data(), p, n * 4);
    return Vec(f.begin(), f.end());
  }

  Backend& backend_;
  std::unique_ptr<OpKernel> kernel_;
  std::vector<DeviceBuffer> buffers_;
};

// |a - b| <= atol + rtol * |b| elementwise, reporting the first few mismatches.
inline void expect_near(const Vec& actual, const Vec& expected, double atol, double rtol,
                        const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double tol = atol + rtol * std::abs(expected[i]);
    if (!(std::abs(actual[i] - expected[i]) <= tol) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << actual[i] << ", expected " << expected[i];
  }
}

// A convolution of this geometry, every other field the default; the op tests' case tables
// vary these and set the rest themselves.
inline Conv2dDesc conv_geometry(const Shape& input, int64_t filters, int kh, int kw, int stride,
                                Padding padding) {
  Conv2dDesc d;
  d.input = input;
  d.out_channels = filters;
  d.kernel_h = kh;
  d.kernel_w = kw;
  d.stride_h = d.stride_w = stride;
  d.padding = padding;
  return d;
}

// A convolution's random input, filter (and bias) and output gradient for OpHarness.
inline OpRun conv_run(const Conv2dDesc& d, uint32_t seed) {
  OpRun run;
  const Shape out = d.output();
  run.inputs = {random_vec(d.input.numel(), seed)};
  run.params = {random_vec(d.weight_count(), seed + 1)};
  if (d.has_bias) run.params.push_back(random_vec(d.out_channels, seed + 2));
  run.output_sizes = {size_t(out.numel())};
  run.output_grads = {random_vec(out.numel(), seed + 3)};
  return run;
}

// A convolution's outputs and gradients in `run` (after OpHarness::run of conv_run(d, ...))
// against the reference: y and dx within (atol, rtol), the weight and bias gradients, sums
// over the whole batch, within (weight_atol, rtol).
inline void expect_conv_matches_reference(const Conv2dDesc& d, const OpRun& run, double atol,
                                          double rtol, double weight_atol) {
  const Vec b = d.has_bias ? run.params[1] : Vec();
  expect_near(run.outputs[0], ref::conv2d_forward(d, run.inputs[0], run.params[0], b), atol, rtol,
              "conv y");
  const auto g = ref::conv2d_backward(d, run.inputs[0], run.params[0], run.output_grads[0]);
  expect_near(run.input_grads[0], g.dx, atol, rtol, "conv dx");
  expect_near(run.param_grads[0], g.dw, weight_atol, rtol, "conv dw");
  if (d.has_bias) expect_near(run.param_grads[1], g.db, weight_atol, rtol, "conv db");
}

// An NHWC shape with no side a multiple of a vector width, so kernels' tails run.
inline const Shape kOddShape{2, 7, 5, 3};

}  // namespace ic::testing

namespace ic::testing {

// Central-difference check of the backend's own f32 gradients: for L = Σ dy·y (y the first
// output, dy = run.output_grads[0]), compares d L / d (input or param `index`) at a sample of
// `samples` positions with the gradient backward produced (already in `run`).
inline void expect_backend_gradient(OpHarness& h, const OpRun& run, bool param, size_t index,
                                    double step, double atol, double rtol, int samples = 12) {
  const Vec& analytic = param ? run.param_grads.at(index) : run.input_grads.at(index);
  const Vec& base = param ? run.params.at(index) : run.inputs.at(index);
  std::mt19937 gen(7);
  for (int s = 0; s < samples; ++s) {
    const size_t i = std::uniform_int_distribution<size_t>(0, base.size() - 1)(gen);
    double loss[2], moved[2];  // f32 rounding makes the two steps differ slightly
    for (int side = 0; side < 2; ++side) {
      OpRun probe = run;
      probe.output_grads.clear();
      Vec& v = param ? probe.params[index] : probe.inputs[index];
      v[i] = static_cast<float>(base[i] + (side ? -step : step));
      moved[side] = std::abs(v[i] - base[i]);
      h.run(probe);
      loss[side] = ref::dot(probe.outputs[0], run.output_grads[0]);
    }
    const double numeric = (loss[0] - loss[1]) / (moved[0] + moved[1]);
    EXPECT_NEAR(analytic[i], numeric, atol + rtol * std::abs(numeric))
        << (param ? "param " : "input ") << index << " element " << i;
  }
}

}  // namespace ic::testing
