// A Backend whose kernels compute nothing useful but check the executor's promises:
// every kernel writes its outputs with a tag and remembers a hash of the bytes it read and
// wrote; at backward it checks those bytes are unchanged (the memory plan kept them) and
// that its saved buffer survived; workspaces are clobbered on every call. Backward writes
// 1 into every gradient it is given, so a value read k times ends with gradient k, which the
// producer's backward records.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ic::testing {

struct MockLog {
  std::vector<std::string> failures;
  std::vector<std::string> forward_order, backward_order;  // op names as run
  // Per kernel (compile order): the first element of its output gradient, seen at backward.
  std::vector<float> output_grad_seen;
  std::vector<OpBindings> bindings;    // per kernel, as bound
  std::vector<std::string> descs;      // per kernel, op_name
  std::vector<bool> needs_input_grad;  // per kernel: conv/dense flag (true for other ops)
};

inline uint64_t fnv_hash(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Bytes of each op's inputs and outputs, from its description.
struct MockShapes {
  std::vector<size_t> inputs, outputs;
  std::vector<size_t> params;  // element counts
};

class MockKernel final : public OpKernel {
 public:
  MockKernel(int id, MockShapes shapes, size_t workspace, size_t saved, BackwardReads reads,
             MockLog& log)
      : id_(id),
        shapes_(std::move(shapes)),
        workspace_(workspace),
        saved_(saved),
        reads_(reads),
        log_(log) {}
  size_t workspace_bytes() const override { return workspace_; }
  size_t saved_bytes() const override { return saved_; }
  BackwardReads backward_reads() const override { return reads_; }
  Status bind(const OpBindings& b) override {
    b_ = b;
    log_.bindings[static_cast<size_t>(id_)] = b;
    return Status();
  }
  void forward(const StepContext&) override {
    log_.forward_order.push_back(log_.descs[static_cast<size_t>(id_)]);
    clobber_workspace();
    input_hash_.clear();
    for (size_t i = 0; i < b_.inputs.size(); ++i)
      input_hash_.push_back(fnv_hash(b_.inputs[i], shapes_.inputs[i]));
    output_hash_.clear();
    for (size_t o = 0; o < b_.outputs.size(); ++o) {
      auto* y = static_cast<float*>(b_.outputs[o]);
      for (size_t e = 0; e < shapes_.outputs[o] / 4; ++e) y[e] = static_cast<float>(id_ + 1 + e);
      output_hash_.push_back(fnv_hash(y, shapes_.outputs[o]));
    }
    if (saved_ > 0) std::memset(b_.saved, id_ & 0x7f, saved_);
  }
  void backward(const StepContext&) override {
    log_.backward_order.push_back(log_.descs[static_cast<size_t>(id_)]);
    const std::string me =
        "kernel " + std::to_string(id_) + " " + log_.descs[static_cast<size_t>(id_)];
    if (reads_.inputs)
      for (size_t i = 0; i < b_.inputs.size(); ++i)
        if (fnv_hash(b_.inputs[i], shapes_.inputs[i]) != input_hash_[i])
          log_.failures.push_back(me + ": input " + std::to_string(i) + " overwritten");
    if (reads_.outputs)
      for (size_t o = 0; o < b_.outputs.size(); ++o)
        if (fnv_hash(b_.outputs[o], shapes_.outputs[o]) != output_hash_[o])
          log_.failures.push_back(me + ": output " + std::to_string(o) + " overwritten");
    const auto* s = static_cast<const unsigned char*>(b_.saved);
    for (size_t k = 0; k < saved_; ++k)
      if (s[k] != (id_ & 0x7f)) {
        log_.failures.push_back(me + ": saved overwritten");
        break;
      }
    float seen = -1.f;
    if (!b_.output_grads.empty() && b_.output_grads[0] != nullptr) {
      const auto* g = static_cast<const float*>(b_.output_grads[0]);
      seen = g[0];
      for (size_t e = 1; e < shapes_.outputs[0] / 4; ++e)
        if (g[e] != seen) {
          log_.failures.push_back(me + ": output gradient not uniform");
          break;
        }
    }
    log_.output_grad_seen[static_cast<size_t>(id_)] = seen;
    clobber_workspace();
    for (size_t i = 0; i < b_.input_grads.size(); ++i)
      if (b_.input_grads[i] != nullptr) fill_ones(b_.input_grads[i], shapes_.inputs[i] / 4);
    for (size_t p = 0; p < b_.param_grads.size(); ++p)
      if (b_.param_grads[p] != nullptr) fill_ones(b_.param_grads[p], shapes_.params[p]);
  }

 private:
  static void fill_ones(void* dst, size_t count) {
    auto* f = static_cast<float*>(dst);
    for (size_t e = 0; e < count; ++e) f[e] = 1.f;
  }
  void clobber_workspace() {
    if (workspace_ > 0) std::memset(b_.workspace, 0xff, workspace_);
  }

  int id_;
  MockShapes shapes_;
  size_t workspace_, saved_;
  BackwardReads reads_;
  MockLog& log_;
  OpBindings b_;
  std::vector<uint64_t> input_hash_, output_hash_;
};

inline size_t f32_bytes(const Shape& s) { return static_cast<size_t>(s.numel()) * 4; }

inline MockShapes mock_shapes(const OpDesc& desc) {
  MockShapes m;
  if (const auto* d = std::get_if<Conv2dDesc>(&desc)) {
    m = {{f32_bytes(d->input)},
         {f32_bytes(d->output())},
         {static_cast<size_t>(d->kernel_h * d->kernel_w * d->input.c() * d->out_channels)}};
    if (d->has_bias) m.params.push_back(static_cast<size_t>(d->out_channels));
  } else if (const auto* d = std::get_if<BatchNormDesc>(&desc)) {
    const auto c = static_cast<size_t>(d->input.c());
    m = {{f32_bytes(d->input)}, {f32_bytes(d->input)}, {c}};
    if (d->has_gamma) m.params.push_back(c);
  } else if (const auto* d = std::get_if<ReluDesc>(&desc)) {
    m = {{f32_bytes(d->input)}, {f32_bytes(d->input)}, {}};
  } else if (const auto* d = std::get_if<Pool2dDesc>(&desc)) {
    m = {{f32_bytes(d->input)}, {f32_bytes(d->output())}, {}};
  } else if (const auto* d = std::get_if<GlobalAvgPoolDesc>(&desc)) {
    m = {{f32_bytes(d->input)}, {f32_bytes(Shape{d->input.n(), d->input.c()})}, {}};
  } else if (const auto* d = std::get_if<ConcatDesc>(&desc)) {
    for (const Shape& s : d->inputs) m.inputs.push_back(f32_bytes(s));
    m.outputs = {f32_bytes(d->output())};
  } else if (const auto* d = std::get_if<DropoutDesc>(&desc)) {
    m = {{f32_bytes(d->input)}, {f32_bytes(d->input)}, {}};
  } else if (const auto* d = std::get_if<DenseDesc>(&desc)) {
    m = {{static_cast<size_t>(d->batch * d->in_features) * 4},
         {static_cast<size_t>(d->batch * d->out_features) * 4},
         {static_cast<size_t>(d->in_features * d->out_features)}};
    if (d->has_bias) m.params.push_back(static_cast<size_t>(d->out_features));
  } else if (const auto* d = std::get_if<AddDesc>(&desc)) {
    m = {{f32_bytes(d->input), f32_bytes(d->input)}, {f32_bytes(d->input)}, {}};
  } else if (const auto* d = std::get_if<SoftmaxCrossEntropyDesc>(&desc)) {
    m = {{static_cast<size_t>(d->batch * d->num_classes) * 4, static_cast<size_t>(d->batch) * 4},
         {4},
         {}};
  } else if (const auto* d = std::get_if<ReshapeDesc>(&desc)) {
    m = {{f32_bytes(d->input)}, {f32_bytes(d->output)}, {}};
  }
  return m;
}

class MockBackend final : public Backend {
 public:
  size_t workspace = 192, saved = 80;  // bytes every kernel asks for
  OpKernel::BackwardReads reads;       // what every kernel says its backward reads
  MockLog log;

  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string description() const override { return "mock"; }
  Result<DeviceBuffer> allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) return error("mock: out of memory");
    std::memset(p, 0xcd, bytes);
    return DeviceBuffer(p, bytes, [](void* q) { std::free(q); });
  }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fill(float* dst, float value, size_t count) override {
    for (size_t i = 0; i < count; ++i) dst[i] = value;
  }
  void synchronize() override {}
  Result<std::unique_ptr<OpKernel>> compile(const OpDesc& desc) override {
    const int id = static_cast<int>(log.descs.size());
    log.descs.emplace_back(op_name(desc));
    bool needs = true;
    if (const auto* c = std::get_if<Conv2dDesc>(&desc)) needs = c->needs_input_grad;
    if (const auto* d = std::get_if<DenseDesc>(&desc)) needs = d->needs_input_grad;
    log.needs_input_grad.push_back(needs);
    log.bindings.emplace_back();
    log.output_grad_seen.push_back(-2.f);
    return std::unique_ptr<OpKernel>(
        std::make_unique<MockKernel>(id, mock_shapes(desc), workspace, saved, reads, log));
  }
  void add_inplace(float* y, const float* x, size_t count) override {
    for (size_t i = 0; i < count; ++i) y[i] += x[i];
  }
  void axpy(float a, const float* x, float* y, size_t count) override {
    for (size_t i = 0; i < count; ++i) y[i] += a * x[i];
  }
  void sum_squares(const float* x, size_t count, float* result) override {
    float s = 0;
    for (size_t i = 0; i < count; ++i) s += x[i] * x[i];
    *result = s;
  }
  void scale_add(float*, float, float, const float*, size_t) override {}
  void scale_add_square(float*, float, float, const float*, size_t) override {}
  void scale_add_over_root(float*, float, float, const float*, const float*, const RootDenominator&,
                           size_t) override {}
  void sum_squares_per_range(const float*, std::span<const FlatRange> ranges,
                             double* host_sums) override {
    for (size_t r = 0; r < ranges.size(); ++r) host_sums[r] = 0.0;
  }
  void ema_update(float*, const float*, size_t, float) override {}
};

}  // namespace ic::testing
