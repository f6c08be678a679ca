// Kernels that are plain loops over NHWC memory: ReLU, Add(+ReLU), channel Concat,
// GlobalAvgPool, Dropout, Reshape and Cast. ReLU, Add, Concat and GlobalAvgPool take f32 or
// bf16 activations (ops.h), computing in f32; their gradients are f32. All are written to be safe
// when an output aliases its input (the graph may run ReLU or Reshape in place).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/dropout_mask.h"
#include "backend/cpu/vector_loops.h"

namespace ic::cpu {
namespace {

template <typename T>
class ReluKernel final : public OpKernel {
 public:
  explicit ReluKernel(const ReluDesc& d) : count_(d.input.numel()) {}
  BackwardReads backward_reads() const override { return {false, true}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("relu", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    chunked(count_, [&](int64_t s, int64_t e) {
      if constexpr (std::is_same_v<T, float>) {
        relu_f32(static_cast<const float*>(b_.inputs[0]) + s,
                 static_cast<float*>(b_.outputs[0]) + s, e - s);
      } else {
        relu_bf16(static_cast<const uint16_t*>(b_.inputs[0]) + s,
                  static_cast<uint16_t*>(b_.outputs[0]) + s, e - s);
      }
    });
  }
  // dx = dy where y > 0.
  void backward(const StepContext&) override {
    if (b_.input_grads.empty() || !b_.input_grads[0]) return;
    const auto* y = static_cast<const T*>(b_.outputs[0]);
    const auto* dy = static_cast<const float*>(b_.output_grads[0]);
    auto* dx = static_cast<float*>(b_.input_grads[0]);
    chunked(count_, [&](int64_t s, int64_t e) {
      masked_grad(y + s, dy + s, dx + s, e - s, 0.f, INFINITY);
    });
  }

 private:
  int64_t count_;
  OpBindings b_;
};

template <typename T>
class AddKernel final : public OpKernel {
 public:
  explicit AddKernel(const AddDesc& d) : count_(d.input.numel()), relu_(d.fused_relu) {}
  BackwardReads backward_reads() const override { return {false, relu_}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("add", b, 2, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    const auto* a = static_cast<const T*>(b_.inputs[0]);
    const auto* c = static_cast<const T*>(b_.inputs[1]);
    auto* y = static_cast<T*>(b_.outputs[0]);
    const float floor = relu_ ? 0.f : -INFINITY;
    chunked(count_, [&](int64_t s, int64_t e) { add(a + s, c + s, y + s, e - s, floor); });
  }
  void backward(const StepContext&) override {
    const auto* y = static_cast<const T*>(b_.outputs[0]);
    const auto* dy = static_cast<const float*>(b_.output_grads[0]);
    for (size_t k = 0; k < b_.input_grads.size(); ++k) {
      auto* dx = static_cast<float*>(b_.input_grads[k]);
      if (!dx) continue;
      chunked(count_, [&](int64_t s, int64_t e) {
        if (relu_) {
          masked_grad(y + s, dy + s, dx + s, e - s, 0.f, INFINITY);
        } else if (dx != dy) {
          std::memcpy(dx + s, dy + s, sizeof(float) * static_cast<size_t>(e - s));
        }
      });
    }
  }

 private:
  int64_t count_;
  bool relu_;
  OpBindings b_;
};

// y[p, off_k + c] = x_k[p, c] for every pixel p = (n,h,w); elements of `element` bytes (the
// activations' type forward, float32 gradients backward).
class ConcatKernel final : public OpKernel {
 public:
  explicit ConcatKernel(const ConcatDesc& d)
      : pixels_(d.inputs.at(0).numel() / d.inputs[0].c()), element_(dtype_size(d.activations)) {
    int64_t offset = 0;
    for (const Shape& s : d.inputs) {
      channels_.push_back(s.c());
      offsets_.push_back(offset);
      offset += s.c();
    }
    total_ = offset;
  }
  BackwardReads backward_reads() const override { return {false, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("concat", b, channels_.size(), 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    auto* y = static_cast<char*>(b_.outputs[0]);
    const size_t e = element_;
    parallel_for(pixels_, 64, [&](int64_t p) {
      for (size_t k = 0; k < channels_.size(); ++k) {
        const auto* x = static_cast<const char*>(b_.inputs[k]);
        std::memcpy(y + (p * total_ + offsets_[k]) * e, x + p * channels_[k] * e,
                    e * static_cast<size_t>(channels_[k]));
      }
    });
  }
  void backward(const StepContext&) override {
    const auto* dy = static_cast<const float*>(b_.output_grads[0]);
    parallel_for(pixels_, 64, [&](int64_t p) {
      for (size_t k = 0; k < channels_.size(); ++k) {
        auto* dx = static_cast<float*>(b_.input_grads[k]);
        if (!dx) continue;
        std::memcpy(dx + p * channels_[k], dy + p * total_ + offsets_[k],
                    sizeof(float) * static_cast<size_t>(channels_[k]));
      }
    });
  }

 private:
  int64_t pixels_, total_ = 0;
  size_t element_;
  std::vector<int64_t> channels_, offsets_;
  OpBindings b_;
};

// y[n,c] = mean over (h,w) of x[n,h,w,c], summed in float32 whatever the activations' type.
template <typename T>
class GlobalAvgPoolKernel final : public OpKernel {
 public:
  explicit GlobalAvgPoolKernel(const GlobalAvgPoolDesc& d)
      : n_(d.input.n()), hw_(d.input.h() * d.input.w()), c_(d.input.c()) {}
  BackwardReads backward_reads() const override { return {false, false}; }
  size_t workspace_bytes() const override {
    return std::is_same_v<T, float> ? 0 : align64(sizeof(float) * static_cast<size_t>(n_ * c_));
  }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("global_avg_pool", b, 1, 1, 0, 0));
    if (workspace_bytes() > 0 && !b.workspace)
      return error("global_avg_pool: needs ", workspace_bytes(), " bytes of workspace, got none");
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    const auto* x = static_cast<const T*>(b_.inputs[0]);
    auto* y = static_cast<T*>(b_.outputs[0]);
    // bf16: the sums in the workspace, then rounded once.
    auto* sums =
        std::is_same_v<T, float> ? reinterpret_cast<float*>(y) : static_cast<float*>(b_.workspace);
    const float scale = 1.f / static_cast<float>(hw_);
    // Split by example and by blocks of channels a cache line wide, so that batch 1 uses
    // every thread too; each channel is still summed in pixel order, whatever the split.
    constexpr int64_t kBlock = 64 / sizeof(T);
    const int64_t blocks = (c_ + kBlock - 1) / kBlock;
    parallel_for(n_ * blocks, 1, [&](int64_t nb) {
      const int64_t n = nb / blocks, c0 = (nb % blocks) * kBlock;
      const int64_t count = std::min(kBlock, c_ - c0);
      float* sn = sums + n * c_ + c0;
      std::fill(sn, sn + count, 0.f);
      sum_rows(x + n * hw_ * c_ + c0, hw_, c_, sn, count);
      for (int64_t c = 0; c < count; ++c) y[n * c_ + c0 + c] = narrow<T>(sn[c] * scale);
    });
  }
  void backward(const StepContext&) override {
    if (b_.input_grads.empty() || !b_.input_grads[0]) return;
    const auto* dy = static_cast<const float*>(b_.output_grads[0]);
    auto* dx = static_cast<float*>(b_.input_grads[0]);
    const float scale = 1.f / static_cast<float>(hw_);
    parallel_for(n_ * hw_, 16, [&](int64_t np) {
      const float* dyn = dy + (np / hw_) * c_;
      float* dxp = dx + np * c_;
      for (int64_t c = 0; c < c_; ++c) dxp[c] = dyn[c] * scale;
    });
  }

 private:
  int64_t n_, hw_, c_;
  OpBindings b_;
};

// y = x in another type (f32 <-> bf16) by oneDNN's reorder (vectorised for this CPU); backward
// copies the f32 gradient.
class CastKernel final : public OpKernel {
 public:
  CastKernel(const CastDesc& d, DnnlContext& ctx)
      : ctx_(ctx),
        count_(d.input.numel()),
        from_({count_}, activation_dt(d.from), tag::a),
        to_({count_}, activation_dt(d.to), tag::a) {}
  BackwardReads backward_reads() const override { return {false, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("cast", b, 1, 1, 0, 0));
    b_ = b;
    try {
      step_ = reorder_step(wrap(from_, ctx_, b.inputs[0]), wrap(to_, ctx_, b.outputs[0]));
    } catch (const dnnl::error& e) {
      return error("cast: binding oneDNN memory: ", e.what());
    }
    return Status();
  }
  void forward(const StepContext&) override { step_.primitive.execute(ctx_.stream, step_.args); }
  void backward(const StepContext&) override {
    if (b_.input_grads.empty() || !b_.input_grads[0] || b_.input_grads[0] == b_.output_grads[0])
      return;
    std::memcpy(b_.input_grads[0], b_.output_grads[0], sizeof(float) * static_cast<size_t>(count_));
  }

 private:
  DnnlContext& ctx_;
  int64_t count_;
  dnnl::memory::desc from_, to_;
  DnnlStep step_;
  OpBindings b_;
};

// Forward on the activations' type T, backward on the f32 gradients, with the same mask.
template <typename T>
class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(const DropoutDesc& d)
      : count_(d.input.numel()),
        per_mask_(d.elements_per_draw()),
        training_(d.training),
        threshold_(dropout_threshold(d.keep_prob)),
        keep_prob_(d.keep_prob) {}
  BackwardReads backward_reads() const override { return {false, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("dropout", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext& ctx) override {
    apply(ctx.seed, static_cast<const T*>(b_.inputs[0]), static_cast<T*>(b_.outputs[0]));
  }
  void backward(const StepContext& ctx) override {
    if (b_.input_grads.empty() || !b_.input_grads[0]) return;
    apply(ctx.seed, static_cast<const float*>(b_.output_grads[0]),
          static_cast<float*>(b_.input_grads[0]));
  }

 private:
  // out = in * mask / keep_prob (the same mask forward and backward). Divides rather than
  // multiplies by 1/keep_prob so the CUDA kernel's values match bit for bit. Per example, the
  // draw's index is the example's (element / per_mask_).
  template <typename E>
  void apply(uint64_t seed, const E* in, E* out) const {
    if (!training_) {
      if (in != out) std::memcpy(out, in, sizeof(E) * static_cast<size_t>(count_));
      return;
    }
    chunked(count_, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        const bool keep = dropout_keep(seed, static_cast<uint64_t>(i / per_mask_), threshold_);
        out[i] = narrow<E>(keep ? widen(in[i]) / keep_prob_ : 0.f);
      }
    });
  }

  int64_t count_;
  int64_t per_mask_;  // elements that share one draw: 1, or a whole example (drop-connect)
  bool training_;
  uint32_t threshold_;
  float keep_prob_;
  OpBindings b_;
};

class ReshapeKernel final : public OpKernel {
 public:
  explicit ReshapeKernel(const ReshapeDesc& d)
      : bytes_(dtype_size(d.activations) * static_cast<size_t>(d.input.numel())),
        grad_bytes_(sizeof(float) * static_cast<size_t>(d.input.numel())) {}
  BackwardReads backward_reads() const override { return {false, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("reshape", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    if (b_.outputs[0] != b_.inputs[0]) std::memcpy(b_.outputs[0], b_.inputs[0], bytes_);
  }
  void backward(const StepContext&) override {
    if (b_.input_grads.empty() || !b_.input_grads[0]) return;
    if (b_.input_grads[0] != b_.output_grads[0])
      std::memcpy(b_.input_grads[0], b_.output_grads[0], grad_bytes_);
  }

 private:
  size_t bytes_, grad_bytes_;
  OpBindings b_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_relu(const ReluDesc& d) {
  return make_for_activations<ReluKernel>("relu", d.activations, d);
}
Result<std::unique_ptr<OpKernel>> make_add(const AddDesc& d) {
  return make_for_activations<AddKernel>("add", d.activations, d);
}
Result<std::unique_ptr<OpKernel>> make_concat(const ConcatDesc& d) {
  if (d.inputs.empty()) return error("concat of no inputs");
  for (const Shape& s : d.inputs) {
    if (s.rank() != 4 || s.n() != d.inputs[0].n() || s.h() != d.inputs[0].h() ||
        s.w() != d.inputs[0].w())
      return error("concat inputs must be NHWC with equal N,H,W; got ", s.str(), " and ",
                   d.inputs[0].str());
  }
  if (d.activations != DType::f32 && d.activations != DType::bf16 && d.activations != DType::u8)
    return error("concat: activations in ", dtype_name(d.activations), " (f32, bf16 or u8 only)");
  return std::unique_ptr<OpKernel>(std::make_unique<ConcatKernel>(d));
}
Result<std::unique_ptr<OpKernel>> make_global_avg_pool(const GlobalAvgPoolDesc& d) {
  if (d.input.rank() != 4) return error("global_avg_pool needs NHWC input, got ", d.input.str());
  return make_for_activations<GlobalAvgPoolKernel>("global_avg_pool", d.activations, d);
}
Result<std::unique_ptr<OpKernel>> make_dropout(const DropoutDesc& d) {
  if (!(d.keep_prob > 0.f && d.keep_prob <= 1.f))
    return error("dropout keep_prob must be in (0, 1], got ", d.keep_prob);
  return make_for_activations<DropoutKernel>("dropout", d.activations, d);
}
Result<std::unique_ptr<OpKernel>> make_reshape(const ReshapeDesc& d) {
  if (d.input.numel() != d.output.numel())
    return error("reshape from ", d.input.str(), " to ", d.output.str(), " changes the size");
  return std::unique_ptr<OpKernel>(std::make_unique<ReshapeKernel>(d));
}
Result<std::unique_ptr<OpKernel>> make_cast(const CastDesc& d, DnnlContext& ctx) {
  const bool known = (d.from == DType::f32 && d.to == DType::bf16) ||
                     (d.from == DType::bf16 && d.to == DType::f32);
  if (!known)
    return error("cast from ", dtype_name(d.from), " to ", dtype_name(d.to), ": only f32 <-> bf16");
  return std::unique_ptr<OpKernel>(std::make_unique<CastKernel>(d, ctx));
}

}  // namespace ic::cpu
