// The ops the smaller networks add (MobileNet, EfficientNet, DenseNet, SqueezeNet): ReLU6,
// sigmoid and swish (ActivationDesc), squeeze-and-excitation's per-channel product
// (ChannelScaleDesc) and zero padding (PadDesc). Activations may be f32 or bf16 (ops.h);
// gradients are f32.
//
// The activation functions run as oneDNN eltwise primitives forward (vectorised exp), and
// backward as oneDNN's f32 eltwise backward on x, widened first when x is bf16; ReLU6's backward
// is a plain loop, so that its gradient passes exactly where TensorFlow's does (0 < x < 6).
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

EltwiseAlgorithm eltwise_algorithm(Activation function) {
  switch (function) {
    case Activation::relu6: return {algorithm::eltwise_bounded_relu, 6.f, 0.f};
    case Activation::sigmoid: return {algorithm::eltwise_logistic, 0.f, 0.f};
    case Activation::swish: return {algorithm::eltwise_swish, 1.f, 0.f};
  }
  return {algorithm::eltwise_logistic, 0.f, 0.f};
}

void append_fused_activation(dnnl::post_ops& post, bool relu,
                             std::optional<Activation> activation) {
  if (relu) post.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
  if (!activation) return;
  const EltwiseAlgorithm a = eltwise_algorithm(*activation);
  post.append_eltwise(1.f, a.alg, a.alpha, a.beta);
}

namespace {

class ActivationKernel final : public OpKernel {
 public:
  ActivationKernel(const ActivationDesc& d, DnnlContext& ctx) : d_(d), ctx_(ctx) {
    const EltwiseAlgorithm a = eltwise_algorithm(d.function);
    const memory::dims flat{d.input.numel()};
    act_md_ = memory::desc(flat, activation_dt(d.activations), tag::x);
    f32_md_ = memory::desc(flat, dt::f32, tag::x);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // forward_training keeps nothing for eltwise; inference graphs and training ones run alike.
    fwd_pd_ = dnnl::eltwise_forward::primitive_desc(
        dnnl::eltwise_forward::desc(prop_kind::forward_training, a.alg, act_md_, a.alpha, a.beta),
        attr, ctx.engine);
    fwd_ = dnnl::eltwise_forward(fwd_pd_);
    scratch_bytes_ = align64(fwd_pd_.scratchpad_desc().get_size());
    if (d.function != Activation::relu6) {
      bwd_pd_ = dnnl::eltwise_backward::primitive_desc(
          dnnl::eltwise_backward::desc(a.alg, f32_md_, f32_md_, a.alpha, a.beta), attr, ctx.engine,
          fwd_pd_);
      bwd_ = dnnl::eltwise_backward(bwd_pd_);
      scratch_bytes_ = std::max(scratch_bytes_, align64(bwd_pd_.scratchpad_desc().get_size()));
    }
    if (d.activations != DType::f32) widened_bytes_ = align64(f32_md_.get_size());
  }

  size_t workspace_bytes() const override { return scratch_bytes_ + widened_bytes_; }
  BackwardReads backward_reads() const override { return {true, false}; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings(activation_name(d_.function), b, 1, 1, 0, 0));
    if (workspace_bytes() > 0 && !b.workspace)
      return error(activation_name(d_.function), ": needs ", workspace_bytes(),
                   " bytes of workspace, got none");
    b_ = b;
    auto* ws = static_cast<char*>(b.workspace);
    const memory scratch(fwd_pd_.scratchpad_desc(), ctx_.engine, ws);
    forward_ = {fwd_,
                {{DNNL_ARG_SRC, wrap(act_md_, ctx_, b.inputs[0])},
                 {DNNL_ARG_DST, wrap(act_md_, ctx_, b.outputs[0])},
                 {DNNL_ARG_SCRATCHPAD, scratch}}};
    backward_.clear();
    if (b.output_grads.empty() || !b.output_grads[0] || b.input_grads.empty() ||
        !b.input_grads[0] || d_.function == Activation::relu6)
      return Status();
    memory x = wrap(act_md_, ctx_, b.inputs[0]);
    if (d_.activations != DType::f32) {
      const memory widened(f32_md_, ctx_.engine, ws + scratch_bytes_);
      backward_.push_back(reorder_step(x, widened));
      x = widened;
    }
    backward_.push_back(
        {bwd_,
         {{DNNL_ARG_SRC, x},
          {DNNL_ARG_DIFF_DST, wrap(f32_md_, ctx_, b.output_grads[0])},
          {DNNL_ARG_DIFF_SRC, wrap(f32_md_, ctx_, b.input_grads[0])},
          {DNNL_ARG_SCRATCHPAD, memory(bwd_pd_.scratchpad_desc(), ctx_.engine, ws)}}});
    return Status();
  }

  void forward(const StepContext&) override {
    forward_.primitive.execute(ctx_.stream, forward_.args);
  }

  void backward(const StepContext&) override {
    if (b_.input_grads.empty() || !b_.input_grads[0]) return;
    if (d_.function == Activation::relu6) {
      if (d_.activations == DType::f32) {
        relu6_backward(static_cast<const float*>(b_.inputs[0]));
      } else {
        relu6_backward(static_cast<const Bf16*>(b_.inputs[0]));
      }
      return;
    }
    run_steps(backward_, ctx_.stream);
  }

 private:
  template <typename T>
  void relu6_backward(const T* x) {
    const auto* dy = static_cast<const float*>(b_.output_grads[0]);
    auto* dx = static_cast<float*>(b_.input_grads[0]);
    const float below_six = std::nextafter(6.f, 0.f);  // passes 0 < x < 6, as Relu6Grad
    chunked(d_.input.numel(), [&](int64_t s, int64_t e) {
      masked_grad(x + s, dy + s, dx + s, e - s, 0.f, below_six);
    });
  }

  ActivationDesc d_;
  DnnlContext& ctx_;
  memory::desc act_md_, f32_md_;
  dnnl::eltwise_forward::primitive_desc fwd_pd_;
  dnnl::eltwise_forward fwd_;
  dnnl::eltwise_backward::primitive_desc bwd_pd_;
  dnnl::eltwise_backward bwd_;
  size_t scratch_bytes_ = 0, widened_bytes_ = 0;
  OpBindings b_;
  DnnlStep forward_;
  std::vector<DnnlStep> backward_;
};

// y[n,p,c] = x[n,p,c] * s[n,c] over the H*W pixels p of each example.
template <typename T>
class ChannelScaleKernel final : public OpKernel {
 public:
  explicit ChannelScaleKernel(const ChannelScaleDesc& d)
      : n_(d.input.n()), pixels_(d.input.h() * d.input.w()), c_(d.input.c()) {}
  BackwardReads backward_reads() const override { return {true, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("scale_channels", b, 2, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    const auto* x = static_cast<const T*>(b_.inputs[0]);
    const auto* s = static_cast<const T*>(b_.inputs[1]);
    auto* y = static_cast<T*>(b_.outputs[0]);
    parallel_for(n_ * pixels_, 64, [&](int64_t row) {
      multiply(x + row * c_, s + (row / pixels_) * c_, y + row * c_, c_);
    });
  }
  // dx = dy * s; ds[n,c] = sum over pixels of dy * x, each (n,c) summed in pixel order.
  void backward(const StepContext&) override {
    const auto* x = static_cast<const T*>(b_.inputs[0]);
    const auto* s = static_cast<const T*>(b_.inputs[1]);
    const auto* dy = static_cast<const float*>(b_.output_grads[0]);
    if (auto* dx = b_.input_grads.empty() ? nullptr : static_cast<float*>(b_.input_grads[0])) {
      parallel_for(n_ * pixels_, 64, [&](int64_t row) {
        const T* sr = s + (row / pixels_) * c_;
        for (int64_t c = 0; c < c_; ++c) dx[row * c_ + c] = dy[row * c_ + c] * widen(sr[c]);
      });
    }
    if (b_.input_grads.size() < 2 || !b_.input_grads[1]) return;
    auto* ds = static_cast<float*>(b_.input_grads[1]);
    parallel_for(n_, 1, [&](int64_t n) {
      float* dsr = ds + n * c_;
      std::fill_n(dsr, c_, 0.f);
      for (int64_t p = 0; p < pixels_; ++p) {
        const int64_t row = (n * pixels_ + p) * c_;
        for (int64_t c = 0; c < c_; ++c) dsr[c] += dy[row + c] * widen(x[row + c]);
      }
    });
  }

 private:
  int64_t n_, pixels_, c_;
  OpBindings b_;
};

// Copies each row of x into the middle of y's, zeros around; backward crops dy.
class PadKernel final : public OpKernel {
 public:
  explicit PadKernel(const PadDesc& d) : d_(d), out_(d.output()) {}
  BackwardReads backward_reads() const override { return {false, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("zero_pad", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  // Each of y's rows once, on all threads: a padding row zeroed, an image row as its zeros
  // left, x's row, its zeros right. (Zeroing all of y first, on one thread, then copying wrote
  // y twice: 6% of DenseNet-121's bf16 inference at batch 32 on a 2-core AMX Xeon, whose stem
  // pads a 112x112x64 map.)
  void forward(const StepContext&) override {
    const Shape& in = d_.input;
    const size_t elem = dtype_size(d_.activations);
    const size_t row = elem * static_cast<size_t>(out_.w() * out_.c());
    const size_t left = elem * static_cast<size_t>(d_.pads.left * in.c());
    const size_t middle = elem * static_cast<size_t>(in.w() * in.c());
    const auto* x = static_cast<const char*>(b_.inputs[0]);
    auto* y = static_cast<char*>(b_.outputs[0]);
    parallel_for(out_.n() * out_.h(), 16, [&](int64_t r) {
      char* to = y + static_cast<size_t>(r) * row;
      const int64_t n = r / out_.h(), h = r % out_.h() - d_.pads.top;
      if (h < 0 || h >= in.h()) {
        std::memset(to, 0, row);
        return;
      }
      std::memset(to, 0, left);
      std::memcpy(to + left, x + static_cast<size_t>(n * in.h() + h) * middle, middle);
      std::memset(to + left + middle, 0, row - left - middle);
    });
  }
  // dx is dy's middle, one image row at a time.
  void backward(const StepContext&) override {
    if (b_.input_grads.empty() || !b_.input_grads[0]) return;
    const Shape& in = d_.input;
    const auto* dy = static_cast<const char*>(b_.output_grads[0]);
    auto* dx = static_cast<char*>(b_.input_grads[0]);
    const size_t row_bytes = sizeof(float) * static_cast<size_t>(in.w() * in.c());
    parallel_for(in.n() * in.h(), 16, [&](int64_t r) {
      const int64_t n = r / in.h(), h = r % in.h();
      const int64_t padded =
          ((n * out_.h() + h + d_.pads.top) * out_.w() + d_.pads.left) * out_.c();
      std::memcpy(dx + static_cast<size_t>(r) * row_bytes,
                  dy + static_cast<size_t>(padded) * sizeof(float), row_bytes);
    });
  }

 private:
  PadDesc d_;
  Shape out_;
  OpBindings b_;
};

Status check_activations(const char* op, DType type) {
  if (type == DType::f32 || type == DType::bf16) return Status();
  return error(op, ": activations in ", dtype_name(type), " (f32 or bf16 only)");
}

}  // namespace

Result<std::unique_ptr<OpKernel>> make_activation(const ActivationDesc& d, DnnlContext& ctx) {
  const char* op = activation_name(d.function);
  IC_RETURN_IF_ERROR(check_activations(op, d.activations));
  try {
    return std::unique_ptr<OpKernel>(std::make_unique<ActivationKernel>(d, ctx));
  } catch (const dnnl::error& e) {
    return error(op, ": oneDNN has no ", dtype_name(d.activations),
                 " implementation on this CPU: ", e.what());
  }
}

Result<std::unique_ptr<OpKernel>> make_channel_scale(const ChannelScaleDesc& d) {
  if (d.input.rank() != 4) return error("scale_channels needs NHWC input, got ", d.input.str());
  return make_for_activations<ChannelScaleKernel>("scale_channels", d.activations, d);
}

Result<std::unique_ptr<OpKernel>> make_pad(const PadDesc& d) {
  if (d.input.rank() != 4 || d.pads.top < 0 || d.pads.bottom < 0 || d.pads.left < 0 ||
      d.pads.right < 0)
    return error("zero_pad needs NHWC input and pads >= 0, got ", d.input.str());
  IC_RETURN_IF_ERROR(check_activations("zero_pad", d.activations));
  return std::unique_ptr<OpKernel>(std::make_unique<PadKernel>(d));
}

}  // namespace ic::cpu
