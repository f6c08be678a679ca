// Max and average pooling on oneDNN, NHWC, with TensorFlow's asymmetric SAME padding.
// Average pooling divides by the number of real (unpadded) inputs in each window, as TF.
// Training max pooling saves oneDNN's argmax workspace for backward; a forward-only kernel
// (training = false) runs oneDNN's forward_inference and prepares no backward. With bf16
// activations (ops.h) forward reads and writes bf16; backward runs on the f32 gradients with an
// f32 primitive whose hint is an f32 forward of the same shape, reading the argmax workspace the
// bf16 forward wrote (where oneDNN's bf16 and f32 workspaces differ, forward runs in f32 too).
// u8 activations (int8 inference) are forward only: oneDNN pools the levels themselves.
// float32 pooling runs our own loops instead where pool_loops_apply says (pool_loops.h).
#include <unordered_map>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/pool_loops.h"

namespace ic::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::pooling_backward;
using dnnl::pooling_forward;
using dnnl::prop_kind;

class PoolKernel final : public OpKernel {
 public:
  PoolKernel(const Pool2dDesc& d, DnnlContext& ctx) : ctx_(ctx) {
    const Pads pads = tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h,
                              d.stride_w, d.padding);
    x_md_ = nhwc_md(d.input, activation_dt(d.activations));
    y_md_ = nhwc_md(d.output(), activation_dt(d.activations));
    const algorithm alg =
        d.kind == PoolKind::max ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
    const memory::dims strides{d.stride_h, d.stride_w}, kernel{d.kernel_h, d.kernel_w};
    const memory::dims pad_l{pads.top, pads.left}, pad_r{pads.bottom, pads.right};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const prop_kind prop = d.training ? prop_kind::forward_training : prop_kind::forward_inference;
    fwd_pd_ = pooling_forward::primitive_desc(
        pooling_forward::desc(prop, alg, x_md_, y_md_, strides, kernel, pad_l, pad_r), attr,
        ctx.engine);
    fwd_ = pooling_forward(fwd_pd_);
    saved_bytes_ = align64(fwd_pd_.workspace_desc().get_size());
    scratch_bytes_ = align64(fwd_pd_.scratchpad_desc().get_size());
    if (!d.training) return;  // forward only: no argmax workspace, no backward
    dx_md_ = nhwc_md(d.input);
    dy_md_ = nhwc_md(d.output());
    const pooling_forward::primitive_desc hint =
        d.activations == DType::f32
            ? fwd_pd_
            : pooling_forward::primitive_desc(
                  pooling_forward::desc(prop, alg, dx_md_, dy_md_, strides, kernel, pad_l, pad_r),
                  attr, ctx.engine);
    // Where they differ, forward runs the f32 primitive too, on copies of x and y in the
    // workspace (through_copy): slower, the same answers, and the argmax backward expects.
    if (hint.workspace_desc() != fwd_pd_.workspace_desc()) {
      fwd_pd_ = hint;
      fwd_ = pooling_forward(fwd_pd_);
      saved_bytes_ = align64(fwd_pd_.workspace_desc().get_size());
    }
    if (fwd_pd_.src_desc() != x_md_) x_copy_bytes_ = align64(fwd_pd_.src_desc().get_size());
    if (fwd_pd_.dst_desc() != y_md_) y_copy_bytes_ = align64(fwd_pd_.dst_desc().get_size());
    bwd_pd_ = pooling_backward::primitive_desc(
        pooling_backward::desc(alg, dx_md_, dy_md_, strides, kernel, pad_l, pad_r), attr,
        ctx.engine, hint);
    bwd_ = pooling_backward(bwd_pd_);
    scratch_bytes_ = align64(
        std::max(fwd_pd_.scratchpad_desc().get_size(), bwd_pd_.scratchpad_desc().get_size()));
  }

  size_t saved_bytes() const override { return saved_bytes_; }
  // [oneDNN scratchpad] [x and y copies in the forward primitive's type, when it is not theirs]
  size_t workspace_bytes() const override { return scratch_bytes_ + x_copy_bytes_ + y_copy_bytes_; }
  BackwardReads backward_reads() const override { return {false, false}; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("pool2d", b, 1, 1, 0, 0));
    if (saved_bytes_ && !b.saved)
      return error("pool2d: needs ", saved_bytes_, " bytes of saved memory, got none");
    if (workspace_bytes() && !b.workspace)
      return error("pool2d: needs ", workspace_bytes(), " bytes of workspace, got none");
    has_grads_ = false;  // bind may be called again with other pointers
    try {
      const dnnl::engine& eng = ctx_.engine;
      auto* copies = static_cast<char*>(b.workspace) + scratch_bytes_;
      before_.clear();
      after_.clear();
      x_ = through_copy(wrap(x_md_, ctx_, b.inputs[0]), fwd_pd_.src_desc(), copies, before_, true);
      y_ = through_copy(memory(y_md_, eng, b.outputs[0]), fwd_pd_.dst_desc(),
                        copies + x_copy_bytes_, after_, false);
      if (saved_bytes_) ws_ = memory(fwd_pd_.workspace_desc(), eng, b.saved);
      scratch_fwd_ = memory(fwd_pd_.scratchpad_desc(), eng, b.workspace);
      if (bwd_pd_) scratch_bwd_ = memory(bwd_pd_.scratchpad_desc(), eng, b.workspace);
      if (bwd_pd_ && !b.output_grads.empty() && b.output_grads[0] && !b.input_grads.empty() &&
          b.input_grads[0]) {
        dy_ = wrap(dy_md_, ctx_, b.output_grads[0]);
        dx_ = memory(dx_md_, eng, b.input_grads[0]);
        has_grads_ = true;
      }
      // The argument maps, built once so forward/backward allocate nothing.
      fwd_args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}, {DNNL_ARG_SCRATCHPAD, scratch_fwd_}};
      bwd_args_ = {
          {DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_DIFF_SRC, dx_}, {DNNL_ARG_SCRATCHPAD, scratch_bwd_}};
      if (saved_bytes_) fwd_args_[DNNL_ARG_WORKSPACE] = bwd_args_[DNNL_ARG_WORKSPACE] = ws_;
    } catch (const dnnl::error& e) {
      return error("pool2d: binding oneDNN memory: ", e.what());
    }
    return Status();
  }

  void forward(const StepContext&) override {
    run_steps(before_, ctx_.stream);
    fwd_.execute(ctx_.stream, fwd_args_);
    run_steps(after_, ctx_.stream);
  }
  void backward(const StepContext&) override {
    if (has_grads_) bwd_.execute(ctx_.stream, bwd_args_);
  }

 private:
  DnnlContext& ctx_;
  memory::desc x_md_, y_md_;    // the activations' type
  memory::desc dx_md_, dy_md_;  // the gradients' (f32)
  pooling_forward::primitive_desc fwd_pd_;
  pooling_forward fwd_;
  pooling_backward::primitive_desc bwd_pd_;
  pooling_backward bwd_;
  size_t saved_bytes_ = 0, scratch_bytes_ = 0, x_copy_bytes_ = 0, y_copy_bytes_ = 0;
  std::vector<DnnlStep> before_, after_;  // into and out of the copies, where there are any
  memory x_, y_, ws_, dy_, dx_, scratch_fwd_, scratch_bwd_;
  std::unordered_map<int, memory> fwd_args_, bwd_args_;
  bool has_grads_ = false;
};

// float32 pooling by pool_loops.h; training max pooling saves the argmax positions (a byte
// per output value) for backward, which then reads neither x nor y.
class PoolLoopKernel final : public OpKernel {
 public:
  explicit PoolLoopKernel(const Pool2dDesc& d)
      : shape_(pool_loop_shape(d)), max_(d.kind == PoolKind::max), training_(d.training) {}

  size_t saved_bytes() const override {
    return max_ && training_
               ? static_cast<size_t>(shape_.n * shape_.out_h * shape_.out_w * shape_.c)
               : 0;
  }
  BackwardReads backward_reads() const override { return {false, false}; }
  std::string implementation() const override { return "pool loops"; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("pool2d", b, 1, 1, 0, 0));
    if (saved_bytes() && !b.saved)
      return error("pool2d: needs ", saved_bytes(), " bytes of saved memory, got none");
    x_ = static_cast<const float*>(b.inputs[0]);
    y_ = static_cast<float*>(b.outputs[0]);
    argmax_ = static_cast<uint8_t*>(b.saved);
    const bool grads = training_ && !b.output_grads.empty() && b.output_grads[0] &&
                       !b.input_grads.empty() && b.input_grads[0];
    dy_ = grads ? static_cast<const float*>(b.output_grads[0]) : nullptr;
    dx_ = grads ? static_cast<float*>(b.input_grads[0]) : nullptr;
    return Status();
  }

  void forward(const StepContext&) override {
    if (max_)
      max_pool_forward(shape_, x_, y_, training_ ? argmax_ : nullptr);
    else
      avg_pool_forward(shape_, x_, y_);
  }
  void backward(const StepContext&) override {
    if (!dx_) return;
    if (max_)
      max_pool_backward(shape_, dy_, argmax_, dx_);
    else
      avg_pool_backward(shape_, dy_, dx_);
  }

 private:
  PoolLoopShape shape_;
  bool max_, training_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  uint8_t* argmax_ = nullptr;
  const float* dy_ = nullptr;
  float* dx_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_pool2d(const Pool2dDesc& d, DnnlContext& ctx) {
  if (d.input.rank() != 4 || d.kernel_h <= 0 || d.kernel_w <= 0 || d.stride_h <= 0 ||
      d.stride_w <= 0)
    return error("pool2d: bad description: input ", d.input.str(), ", kernel ", d.kernel_h, "x",
                 d.kernel_w, ", stride ", d.stride_h, "x", d.stride_w);
  const Shape out = d.output();
  if (out.h() <= 0 || out.w() <= 0)
    return error("pool2d: input ", d.input.str(), " is smaller than the window");
  if (d.activations == DType::u8 && d.training)
    return error("pool2d: u8 activations are for forward-only (int8 inference) pools");
  if (d.activations != DType::f32 && d.activations != DType::bf16 && d.activations != DType::u8)
    return error("pool2d: activations in ", dtype_name(d.activations), " (f32, bf16 or u8 only)");
  if (pool_loops_apply(d)) return std::unique_ptr<OpKernel>(std::make_unique<PoolLoopKernel>(d));
  return std::unique_ptr<OpKernel>(std::make_unique<PoolKernel>(d, ctx));
}

}  // namespace ic::cpu
