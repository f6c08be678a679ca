// The ops that are our own kernels (cuda_kernels.h): relu, add, pooling, global average pool,
// concat, dropout, softmax cross-entropy, reshape; ReLU6/sigmoid/swish, scale_channels and
// zero_pad. Each class only checks its bindings and
// forwards to a launcher; the arithmetic is in the .cu files.
#include "backend/cuda/cuda_common.h"

namespace ic::cuda {

ActFn act_fn(Activation function) {
  switch (function) {
    case Activation::relu6: return ActFn::relu6;
    case Activation::sigmoid: return ActFn::sigmoid;
    case Activation::swish: return ActFn::swish;
  }
  return ActFn::relu6;
}

namespace {

// The parts every simple kernel shares: the context, the bindings, error recording.
class SimpleKernel : public OpKernel {
 public:
  explicit SimpleKernel(CudaContext& ctx) : ctx_(ctx) {}

 protected:
  const float* in(size_t i) const { return static_cast<const float*>(b_.inputs[i]); }
  float* out(size_t i) const { return static_cast<float*>(b_.outputs[i]); }
  const float* dy() const { return static_cast<const float*>(b_.output_grads.at(0)); }
  // Null when the graph does not need this input's gradient.
  float* dx(size_t i) const {
    return i < b_.input_grads.size() ? static_cast<float*>(b_.input_grads[i]) : nullptr;
  }

  CudaContext& ctx_;
  OpBindings b_;
};

class ReluKernel final : public SimpleKernel {
 public:
  ReluKernel(const ReluDesc& d, CudaContext& ctx) : SimpleKernel(ctx), count_(d.input.numel()) {}
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("relu", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    IC_CUDA_RECORD(ctx_, launch_relu_forward(in(0), out(0), count_, ctx_.stream));
  }
  void backward(const StepContext&) override {
    if (dx(0)) IC_CUDA_RECORD(ctx_, launch_relu_backward(out(0), dy(), dx(0), count_, ctx_.stream));
  }

 private:
  int64_t count_;
};

class AddKernel final : public SimpleKernel {
 public:
  AddKernel(const AddDesc& d, CudaContext& ctx)
      : SimpleKernel(ctx), count_(d.input.numel()), relu_(d.fused_relu) {}
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings(relu_ ? "add+relu" : "add", b, 2, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    IC_CUDA_RECORD(ctx_, launch_add_forward(in(0), in(1), out(0), count_, relu_, ctx_.stream));
  }
  void backward(const StepContext&) override {
    // Without the ReLU the output is not read (and may not be kept alive): pass null.
    IC_CUDA_RECORD(ctx_, launch_add_backward(relu_ ? out(0) : nullptr, dy(), dx(0), dx(1), count_,
                                             relu_, ctx_.stream));
  }

 private:
  int64_t count_;
  bool relu_;
};

class PoolKernel final : public SimpleKernel {
 public:
  PoolKernel(const Pool2dDesc& d, CudaContext& ctx)
      : SimpleKernel(ctx), max_(d.kind == PoolKind::max) {
    static_cast<PoolWindows&>(g_) = pool_windows(d);
    g_.in = nhwc(d.input);
    out_count_ = d.output().numel();
  }
  size_t saved_bytes() const override {
    return max_ ? static_cast<size_t>(out_count_) * sizeof(int32_t) : 0;
  }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings(max_ ? "max_pool" : "avg_pool", b, 1, 1, 0, 0));
    if (max_ && !b.saved) return error("max_pool: null saved buffer (argmax)");
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    if (max_)
      IC_CUDA_RECORD(ctx_, launch_max_pool_forward(in(0), out(0), static_cast<int32_t*>(b_.saved),
                                                   g_, ctx_.stream));
    else
      IC_CUDA_RECORD(ctx_, launch_avg_pool_forward(in(0), out(0), g_, ctx_.stream));
  }
  void backward(const StepContext&) override {
    if (!dx(0)) return;
    if (max_)
      IC_CUDA_RECORD(ctx_, launch_max_pool_backward(dy(), static_cast<const int32_t*>(b_.saved),
                                                    dx(0), g_, ctx_.stream));
    else
      IC_CUDA_RECORD(ctx_, launch_avg_pool_backward(dy(), dx(0), g_, ctx_.stream));
  }

 private:
  bool max_;
  PoolGeometry g_;
  int64_t out_count_ = 0;
};

class GlobalAvgPoolKernel final : public SimpleKernel {
 public:
  GlobalAvgPoolKernel(const GlobalAvgPoolDesc& d, CudaContext& ctx)
      : SimpleKernel(ctx), s_(nhwc(d.input)) {}
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("global_avg_pool", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    IC_CUDA_RECORD(ctx_, launch_global_avg_pool_forward(in(0), out(0), s_, ctx_.stream));
  }
  void backward(const StepContext&) override {
    if (dx(0)) IC_CUDA_RECORD(ctx_, launch_global_avg_pool_backward(dy(), dx(0), s_, ctx_.stream));
  }

 private:
  Nhwc s_;
};

// y[p, offset_i + j] = x_i[p, j]: one strided copy per input, forward and backward.
class ConcatKernel final : public SimpleKernel {
 public:
  ConcatKernel(const ConcatDesc& d, CudaContext& ctx) : SimpleKernel(ctx) {
    const Shape out = d.output();
    rows_ = out.n() * out.h() * out.w();
    total_ = out.c();
    for (const Shape& s : d.inputs) channels_.push_back(s.c());
  }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("concat", b, channels_.size(), 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    int64_t offset = 0;
    for (size_t i = 0; i < channels_.size(); ++i) {
      IC_CUDA_RECORD(ctx_, launch_copy_columns(in(i), channels_[i], 0, out(0), total_, offset,
                                               rows_, channels_[i], ctx_.stream));
      offset += channels_[i];
    }
  }
  void backward(const StepContext&) override {
    int64_t offset = 0;
    for (size_t i = 0; i < channels_.size(); ++i) {
      if (dx(i))
        IC_CUDA_RECORD(ctx_, launch_copy_columns(dy(), total_, offset, dx(i), channels_[i], 0,
                                                 rows_, channels_[i], ctx_.stream));
      offset += channels_[i];
    }
  }

 private:
  int64_t rows_ = 0, total_ = 0;
  std::vector<int64_t> channels_;
};

class DropoutKernel final : public SimpleKernel {
 public:
  DropoutKernel(const DropoutDesc& d, CudaContext& ctx) : SimpleKernel(ctx), d_(d) {}
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("dropout", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext& ctx) override { apply(in(0), out(0), ctx); }
  // The mask is a function of (seed, index): the backward redraws it.
  void backward(const StepContext& ctx) override {
    if (dx(0)) apply(dy(), dx(0), ctx);
  }

 private:
  void apply(const float* x, float* y, const StepContext& ctx) {
    const int64_t count = d_.input.numel();
    if (!d_.training) {
      if (x != y)
        ctx_.record(IC_CUDA_CHECK(
            cudaMemcpyAsync(y, x, count * sizeof(float), cudaMemcpyDeviceToDevice, ctx_.stream)));
      return;
    }
    IC_CUDA_RECORD(ctx_, launch_dropout(x, y, count, d_.elements_per_draw(), d_.keep_prob, ctx.seed,
                                        ctx_.capture_seed(), ctx_.stream));
  }
  DropoutDesc d_;
};

class SoftmaxCrossEntropyKernel final : public SimpleKernel {
 public:
  SoftmaxCrossEntropyKernel(const SoftmaxCrossEntropyDesc& d, CudaContext& ctx)
      : SimpleKernel(ctx), d_(d) {}
  size_t workspace_bytes() const override {
    return static_cast<size_t>(2 * d_.batch) * sizeof(float);
  }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("softmax_cross_entropy", b, 2, 1, 0, 0));
    if (!b.workspace) return error("softmax_cross_entropy: null workspace");
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    IC_CUDA_RECORD(ctx_, launch_xent_forward(
                             in(0), labels(), d_.batch, d_.num_classes, d_.label_smoothing,
                             d_.weight, static_cast<float*>(b_.workspace), out(0), ctx_.stream));
  }
  // The loss is a root: its output gradient is 1, so output_grads are not read.
  void backward(const StepContext&) override {
    if (dx(0))
      IC_CUDA_RECORD(ctx_, launch_xent_backward(in(0), labels(), d_.batch, d_.num_classes,
                                                d_.label_smoothing, d_.weight, dx(0), ctx_.stream));
  }

 private:
  const int32_t* labels() const { return static_cast<const int32_t*>(b_.inputs[1]); }
  SoftmaxCrossEntropyDesc d_;
};

// y aliases x in the graph's plan; a copy happens only if the planner gave y its own buffer.
class ReshapeKernel final : public SimpleKernel {
 public:
  ReshapeKernel(const ReshapeDesc& d, CudaContext& ctx)
      : SimpleKernel(ctx), bytes_(static_cast<size_t>(d.input.numel()) * sizeof(float)) {}
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("reshape", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override { copy(out(0), in(0)); }
  void backward(const StepContext&) override {
    if (dx(0)) copy(dx(0), dy());
  }

 private:
  void copy(void* dst, const void* src) {
    if (dst != src)
      ctx_.record(
          IC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes_, cudaMemcpyDeviceToDevice, ctx_.stream)));
  }
  size_t bytes_;
};

class ActivationKernel final : public SimpleKernel {
 public:
  ActivationKernel(const ActivationDesc& d, CudaContext& ctx)
      : SimpleKernel(ctx), d_(d), fn_(act_fn(d.function)) {}
  BackwardReads backward_reads() const override { return {true, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings(activation_name(d_.function), b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    IC_CUDA_RECORD(ctx_,
                   launch_activation_forward(in(0), out(0), d_.input.numel(), fn_, ctx_.stream));
  }
  void backward(const StepContext&) override {
    if (dx(0))
      IC_CUDA_RECORD(
          ctx_, launch_activation_backward(in(0), dy(), dx(0), d_.input.numel(), fn_, ctx_.stream));
  }

 private:
  ActivationDesc d_;
  ActFn fn_;
};

class ChannelScaleKernel final : public SimpleKernel {
 public:
  ChannelScaleKernel(const ChannelScaleDesc& d, CudaContext& ctx)
      : SimpleKernel(ctx), shape_(nhwc(d.input)) {}
  BackwardReads backward_reads() const override { return {true, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("scale_channels", b, 2, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    IC_CUDA_RECORD(ctx_, launch_channel_scale_forward(in(0), in(1), out(0), shape_, ctx_.stream));
  }
  void backward(const StepContext&) override {
    IC_CUDA_RECORD(
        ctx_, launch_channel_scale_backward(in(0), in(1), dy(), dx(0), dx(1), shape_, ctx_.stream));
  }

 private:
  Nhwc shape_;
};

// Zero padding is the convolutions' staging copy (launch_pad_convert) and its crop.
class PadKernel final : public SimpleKernel {
 public:
  PadKernel(const PadDesc& d, CudaContext& ctx)
      : SimpleKernel(ctx), in_(nhwc(d.input)), out_(nhwc(d.output())), pads_(d.pads) {}
  BackwardReads backward_reads() const override { return {false, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("zero_pad", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    IC_CUDA_RECORD(ctx_, launch_pad_convert(in(0), in_, out(0), ElemType::f32, out_.h, out_.w,
                                            pads_.top, pads_.left, ctx_.stream));
  }
  void backward(const StepContext&) override {
    if (dx(0))
      IC_CUDA_RECORD(ctx_, launch_crop_convert(dy(), ElemType::f32, out_.h, out_.w, pads_.top,
                                               pads_.left, dx(0), in_, nullptr, ctx_.stream));
  }

 private:
  Nhwc in_, out_;
  Pads pads_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_relu(const ReluDesc& d, CudaContext& ctx) {
  return std::unique_ptr<OpKernel>(std::make_unique<ReluKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_add(const AddDesc& d, CudaContext& ctx) {
  return std::unique_ptr<OpKernel>(std::make_unique<AddKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_pool2d(const Pool2dDesc& d, CudaContext& ctx) {
  if (d.input.rank() != 4) return error("pool2d wants NHWC input, got ", d.input.str());
  if (d.kernel_h < 1 || d.kernel_w < 1 || d.stride_h < 1 || d.stride_w < 1)
    return error("pool2d: kernel and stride must be >= 1");
  if (d.input.h() * d.input.w() > INT32_MAX)
    return error("pool2d: image too large for int32 argmax");
  if (d.activations == DType::u8)
    return error("pool2d: u8 activations are int8 inference, CPU only");
  return std::unique_ptr<OpKernel>(std::make_unique<PoolKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_global_avg_pool(const GlobalAvgPoolDesc& d,
                                                       CudaContext& ctx) {
  if (d.input.rank() != 4) return error("global_avg_pool wants NHWC input, got ", d.input.str());
  return std::unique_ptr<OpKernel>(std::make_unique<GlobalAvgPoolKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_concat(const ConcatDesc& d, CudaContext& ctx) {
  if (d.inputs.empty()) return error("concat of no inputs");
  for (const Shape& s : d.inputs)
    if (s.rank() != 4) return error("concat wants NHWC inputs, got ", s.str());
  if (d.activations == DType::u8)
    return error("concat: u8 activations are int8 inference, CPU only");
  return std::unique_ptr<OpKernel>(std::make_unique<ConcatKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_dropout(const DropoutDesc& d, CudaContext& ctx) {
  if (d.training && (d.keep_prob <= 0.f || d.keep_prob > 1.f))
    return error("dropout keep_prob must be in (0, 1], got ", d.keep_prob);
  return std::unique_ptr<OpKernel>(std::make_unique<DropoutKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_softmax_cross_entropy(const SoftmaxCrossEntropyDesc& d,
                                                             CudaContext& ctx) {
  if (d.batch <= 0 || d.num_classes <= 0)
    return error("softmax_cross_entropy needs batch and classes > 0, got ", d.batch, "x",
                 d.num_classes);
  return std::unique_ptr<OpKernel>(std::make_unique<SoftmaxCrossEntropyKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_reshape(const ReshapeDesc& d, CudaContext& ctx) {
  if (d.input.numel() != d.output.numel())
    return error("reshape from ", d.input.str(), " to ", d.output.str(), " changes the size");
  return std::unique_ptr<OpKernel>(std::make_unique<ReshapeKernel>(d, ctx));
}

Result<std::unique_ptr<OpKernel>> make_activation(const ActivationDesc& d, CudaContext& ctx) {
  return std::unique_ptr<OpKernel>(std::make_unique<ActivationKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_channel_scale(const ChannelScaleDesc& d, CudaContext& ctx) {
  if (d.input.rank() != 4) return error("scale_channels wants NHWC input, got ", d.input.str());
  return std::unique_ptr<OpKernel>(std::make_unique<ChannelScaleKernel>(d, ctx));
}
Result<std::unique_ptr<OpKernel>> make_pad(const PadDesc& d, CudaContext& ctx) {
  if (d.input.rank() != 4 || d.pads.top < 0 || d.pads.bottom < 0 || d.pads.left < 0 ||
      d.pads.right < 0)
    return error("zero_pad wants NHWC input and pads >= 0, got ", d.input.str());
  return std::unique_ptr<OpKernel>(std::make_unique<PadKernel>(d, ctx));
}

}  // namespace ic::cuda
