// Conv2d on oneDNN. Weights live in the arena as HWIO and are reordered at each call
// into the format the primitive chose (weights change every step). Activations in the
// arena are NHWC f32; the primitive may want them otherwise, and then the kernel converts
// into "internal" copies in its workspace:
//   - bf16 compute: x and dy as NHWC bf16 (outputs and gradients stay f32);
//   - Winograd (3x3 stride 1 on large maps, f32): x, y/dy and dx in oneDNN's blocked layout,
//     where Winograd F(4x4, 3x3) does about half the multiply-adds of direct convolution.
//
// Workspace layout: [oneDNN scratchpad (largest of the three primitives)] [x internal]
// [y / dy internal] [weights in the primitive's format] [dw in the primitive's format].
// Backward runs weights before data so dx's internal copy can reuse x's region, and
// reorders the weights again (cheap) rather than keeping forward's copy between calls.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {
namespace {

using dnnl::algorithm;
using dnnl::convolution_backward_data;
using dnnl::convolution_backward_weights;
using dnnl::convolution_forward;
using dnnl::memory;
using dnnl::prop_kind;

// Winograd pays for its layout conversions only on large maps with enough channels.
bool prefers_winograd(const Conv2dDesc& d) {
  const Shape out = d.output();
  return d.compute == DType::f32 && d.kernel_h == 3 && d.kernel_w == 3 && d.stride_h == 1 &&
         d.stride_w == 1 && out.h() * out.w() >= 35 * 35 && d.input.c() >= 32 &&
         d.out_channels >= 32;
}

class ConvKernel final : public OpKernel {
 public:
  ConvKernel(const Conv2dDesc& d, DnnlContext& ctx) : d_(d), ctx_(ctx) {
    x_md_ = nhwc_md(d.input);
    y_md_ = nhwc_md(d.output());
    w_hwio_md_ =
        memory::desc({d.out_channels, d.input.c(), d.kernel_h, d.kernel_w}, dt::f32, tag::hwio);
    bool built = false;
    if (prefers_winograd(d)) {
      try {
        build(algorithm::convolution_winograd, dt::f32, tag::any);
        built = internal_layouts_consistent();
      } catch (const dnnl::error&) {
        built = false;  // no Winograd implementation on this CPU: direct below
      }
    }
    if (!built && d.compute == DType::bf16 && ctx.native_bf16) {
      build(algorithm::convolution_direct, dt::bf16, tag::nhwc);
      built = true;
    }
    // f32, or bf16 on a CPU without bf16 convolutions: computed in float32, which is at least
    // as accurate (the backend's description says so).
    if (!built) build(algorithm::convolution_direct, dt::f32, tag::nhwc);

    size_t scratch = fwd_pd_.scratchpad_desc().get_size();
    scratch = std::max(scratch, bwd_weights_pd_.scratchpad_desc().get_size());
    if (d.needs_input_grad) scratch = std::max(scratch, bwd_data_pd_.scratchpad_desc().get_size());
    scratch_bytes_ = align64(scratch);
    size_t x_bytes = 0, y_bytes = 0;
    if (fwd_pd_.src_desc() != x_md_) x_bytes = fwd_pd_.src_desc().get_size();
    if (d.needs_input_grad && bwd_data_pd_.diff_src_desc() != x_md_)
      x_bytes = std::max(x_bytes, bwd_data_pd_.diff_src_desc().get_size());
    if (fwd_pd_.dst_desc() != y_md_) y_bytes = fwd_pd_.dst_desc().get_size();
    if (bwd_weights_pd_.diff_dst_desc() != y_md_)
      y_bytes = std::max(y_bytes, bwd_weights_pd_.diff_dst_desc().get_size());
    x_int_bytes_ = align64(x_bytes);
    y_int_bytes_ = align64(y_bytes);
    size_t w_bytes = fwd_pd_.weights_desc().get_size();
    if (d.needs_input_grad) w_bytes = std::max(w_bytes, bwd_data_pd_.weights_desc().get_size());
    w_bytes_ = align64(w_bytes);
    if (bwd_weights_pd_.diff_weights_desc() != w_hwio_md_)
      dw_bytes_ = align64(bwd_weights_pd_.diff_weights_desc().get_size());
  }

  size_t workspace_bytes() const override {
    return scratch_bytes_ + x_int_bytes_ + y_int_bytes_ + w_bytes_ + dw_bytes_;
  }
  BackwardReads backward_reads() const override { return {true, false}; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("conv2d", b, 1, 1, d_.has_bias ? 2 : 1, 0));
    if (workspace_bytes() > 0 && !b.workspace)
      return error("conv2d: needs ", workspace_bytes(), " bytes of workspace, got none");
    try {
      bind_memories(b);
    } catch (const dnnl::error& e) {
      return error("conv2d: binding oneDNN memory: ", e.what());
    }
    return Status();
  }

  void forward(const StepContext&) override { run_steps(forward_steps_, ctx_.stream); }
  void backward(const StepContext&) override { run_steps(backward_steps_, ctx_.stream); }

 private:
  // Creates the three primitives. `ct` is the compute type of x, w and dy; `act` the
  // activation layout asked for (nhwc, or any to let oneDNN choose).
  void build(algorithm alg, dt ct, tag act) {
    const Conv2dDesc& d = d_;
    const Shape out = d.output();
    const Pads pads = tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h,
                              d.stride_w, d.padding);
    const memory::dims wdims = w_hwio_md_.dims();
    const memory::desc x(x_md_.dims(), ct, act), dy(y_md_.dims(), ct, act);
    const memory::desc y(y_md_.dims(), dt::f32, act), dx(x_md_.dims(), dt::f32, act);
    const memory::desc w_any(wdims, ct, tag::any), dw_any(wdims, dt::f32, tag::any);
    const memory::desc b =
        d.has_bias ? memory::desc({d.out_channels}, dt::f32, tag::x) : memory::desc();
    const memory::dims strides{d.stride_h, d.stride_w};
    const memory::dims pad_l{pads.top, pads.left}, pad_r{pads.bottom, pads.right};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    fwd_pd_ = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_training, alg, x, w_any, b, y, strides, pad_l,
                                  pad_r),
        attr, ctx_.engine);
    bwd_weights_pd_ = convolution_backward_weights::primitive_desc(
        convolution_backward_weights::desc(alg, x, dw_any, b, dy, strides, pad_l, pad_r), attr,
        ctx_.engine, fwd_pd_);
    if (d.needs_input_grad) {
      bwd_data_pd_ = convolution_backward_data::primitive_desc(
          convolution_backward_data::desc(alg, dx, w_any, dy, strides, pad_l, pad_r), attr,
          ctx_.engine, fwd_pd_);
      bwd_data_ = convolution_backward_data(bwd_data_pd_);
    }
    fwd_ = convolution_forward(fwd_pd_);
    bwd_weights_ = convolution_backward_weights(bwd_weights_pd_);
  }

  // The workspace plan assumes forward and backward agree on the internal layouts.
  bool internal_layouts_consistent() const {
    if (fwd_pd_.src_desc() != bwd_weights_pd_.src_desc()) return false;
    if (!d_.needs_input_grad) return true;
    return bwd_data_pd_.diff_dst_desc() == bwd_weights_pd_.diff_dst_desc();
  }

  // Builds forward's steps: [x to internal] w to the primitive's format, conv, [y to arena];
  // and backward's: [dy to internal] [x to internal] weights grad [dw to HWIO], then when dx
  // is wanted: w to bwd's format, data grad [dx to arena].
  void bind_memories(const OpBindings& b) {
    forward_steps_.clear();  // bind may be called again with other pointers
    backward_steps_.clear();
    const dnnl::engine& eng = ctx_.engine;
    auto* ws = static_cast<char*>(b.workspace);
    char* x_region = ws + scratch_bytes_;
    char* y_region = x_region + x_int_bytes_;
    char* w_region = y_region + y_int_bytes_;
    char* dw_region = w_region + w_bytes_;

    // The memory a primitive reads or writes: the arena's own, or an internal copy in
    // `region` with a reorder added to `steps` (into the copy, or back out of it).
    auto internal = [&](const memory& arena, const memory::desc& want, char* region,
                        std::vector<DnnlStep>& steps, bool into_internal) {
      if (want == arena.get_desc()) return arena;
      memory m(want, eng, region);
      steps.push_back(into_internal ? reorder_step(arena, m) : reorder_step(m, arena));
      return m;
    };

    const memory x_arena = wrap(x_md_, ctx_, b.inputs[0]);
    const memory w_hwio(w_hwio_md_, eng, b.params[0]);
    const memory x = internal(x_arena, fwd_pd_.src_desc(), x_region, forward_steps_, true);
    const memory w_fwd(fwd_pd_.weights_desc(), eng, w_region);
    forward_steps_.push_back(reorder_step(w_hwio, w_fwd));
    const memory y_arena(y_md_, eng, b.outputs[0]);
    std::vector<DnnlStep> y_out;
    const memory y = internal(y_arena, fwd_pd_.dst_desc(), y_region, y_out, false);
    DnnlStep conv{fwd_,
                  {{DNNL_ARG_SRC, x},
                   {DNNL_ARG_WEIGHTS, w_fwd},
                   {DNNL_ARG_DST, y},
                   {DNNL_ARG_SCRATCHPAD, memory(fwd_pd_.scratchpad_desc(), eng, ws)}}};
    if (d_.has_bias) conv.args[DNNL_ARG_BIAS] = memory(fwd_pd_.bias_desc(), eng, b.params[1]);
    forward_steps_.push_back(std::move(conv));
    for (DnnlStep& step : y_out) forward_steps_.push_back(std::move(step));

    if (b.output_grads.empty() || !b.output_grads[0]) return;  // inference binding
    if (b.param_grads.size() != b.params.size())
      throw dnnl::error(dnnl_invalid_arguments, "one gradient per parameter expected");
    const memory dy_arena = wrap(y_md_, ctx_, b.output_grads[0]);
    const memory dy =
        internal(dy_arena, bwd_weights_pd_.diff_dst_desc(), y_region, backward_steps_, true);
    // x's internal copy may have been overwritten by other ops since forward: redo it.
    internal(x_arena, fwd_pd_.src_desc(), x_region, backward_steps_, true);
    const memory dw_hwio(w_hwio_md_, eng, b.param_grads[0]);
    std::vector<DnnlStep> dw_out;
    const memory dw =
        internal(dw_hwio, bwd_weights_pd_.diff_weights_desc(), dw_region, dw_out, false);
    DnnlStep grad_w{bwd_weights_,
                    {{DNNL_ARG_SRC, x},
                     {DNNL_ARG_DIFF_DST, dy},
                     {DNNL_ARG_DIFF_WEIGHTS, dw},
                     {DNNL_ARG_SCRATCHPAD, memory(bwd_weights_pd_.scratchpad_desc(), eng, ws)}}};
    if (d_.has_bias)
      grad_w.args[DNNL_ARG_DIFF_BIAS] =
          memory(bwd_weights_pd_.diff_bias_desc(), eng, b.param_grads[1]);
    backward_steps_.push_back(std::move(grad_w));
    for (DnnlStep& step : dw_out) backward_steps_.push_back(std::move(step));

    if (!d_.needs_input_grad || b.input_grads.empty() || !b.input_grads[0]) return;
    const memory w_bwd(bwd_data_pd_.weights_desc(), eng, w_region);
    backward_steps_.push_back(reorder_step(w_hwio, w_bwd));
    const memory dx_arena(x_md_, eng, b.input_grads[0]);
    std::vector<DnnlStep> dx_out;
    const memory dx = internal(dx_arena, bwd_data_pd_.diff_src_desc(), x_region, dx_out, false);
    backward_steps_.push_back(
        {bwd_data_,
         {{DNNL_ARG_DIFF_DST, dy},
          {DNNL_ARG_WEIGHTS, w_bwd},
          {DNNL_ARG_DIFF_SRC, dx},
          {DNNL_ARG_SCRATCHPAD, memory(bwd_data_pd_.scratchpad_desc(), eng, ws)}}});
    for (DnnlStep& step : dx_out) backward_steps_.push_back(std::move(step));
  }

  Conv2dDesc d_;
  DnnlContext& ctx_;
  memory::desc x_md_, y_md_, w_hwio_md_;  // the arena's layouts
  convolution_forward::primitive_desc fwd_pd_;
  convolution_forward fwd_;
  convolution_backward_data::primitive_desc bwd_data_pd_;
  convolution_backward_data bwd_data_;
  convolution_backward_weights::primitive_desc bwd_weights_pd_;
  convolution_backward_weights bwd_weights_;
  size_t scratch_bytes_ = 0, x_int_bytes_ = 0, y_int_bytes_ = 0, w_bytes_ = 0, dw_bytes_ = 0;
  std::vector<DnnlStep> forward_steps_, backward_steps_;
};

}  // namespace

bool has_bf16_convolutions(const dnnl::engine& engine) {
  // oneDNN builds bf16 convolutions only for AVX-512 (native with AVX512_BF16 or AMX, emulated
  // on AVX512_CORE); asking for the smallest one tells.
  const memory::desc x({1, 1, 1, 1}, dt::bf16, tag::nhwc), y({1, 1, 1, 1}, dt::f32, tag::nhwc);
  const memory::desc w({1, 1, 1, 1}, dt::bf16, tag::any);
  try {
    convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, x, w,
                                  memory::desc(), y, {1, 1}, {0, 0}, {0, 0}),
        engine);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

Result<std::unique_ptr<OpKernel>> make_conv2d(const Conv2dDesc& d, DnnlContext& ctx) {
  if (d.input.rank() != 4 || d.out_channels <= 0 || d.kernel_h <= 0 || d.kernel_w <= 0 ||
      d.stride_h <= 0 || d.stride_w <= 0)
    return error("conv2d: bad description: input ", d.input.str(), ", ", d.out_channels,
                 " filters, kernel ", d.kernel_h, "x", d.kernel_w, ", stride ", d.stride_h, "x",
                 d.stride_w);
  const Shape out = d.output();
  if (out.h() <= 0 || out.w() <= 0)
    return error("conv2d: input ", d.input.str(), " is smaller than the ", d.kernel_h, "x",
                 d.kernel_w, " kernel");
  if (d.compute != DType::f32 && d.compute != DType::bf16)
    return error("conv2d: compute type ", dtype_name(d.compute), " is not supported");
  return std::unique_ptr<OpKernel>(std::make_unique<ConvKernel>(d, ctx));
}

}  // namespace ic::cpu
