// Conv2d on oneDNN. Weights live in the arena as HWIO and are reordered into the format the
// primitive chose: at each call (training: weights change every step), or once at the first
// forward when the desc says they are constant (an inference graph's folded weights), into a
// buffer shared by every kernel of the backend converting the same slice to the same format
// (the graphs of several batch sizes over one parameter arena). Activations in the arena are NHWC
// f32; the primitive may want them otherwise, and then the kernel converts into "internal" copies
// in its workspace:
//   - bf16 compute on f32 activations: x and dy as NHWC bf16 (y and gradients stay f32);
//   - bf16 activations (ops.h): x and y are bf16 in the arena and a bf16 convolution reads and
//     writes them as they are; a float32 one (a CPU without bf16) converts both; the gradients
//     stay f32;
//   - a blocked layout (oneDNN's nChw8c / nChw16c, Winograd's): x, y/dy and dx converted.
//
// Which implementation (a ConvPlan: oneDNN algorithm, activation layout, compute type):
//   - training: Winograd F(4x4, 3x3) for 3x3 stride-1 convs on large maps where this CPU has
//     it (about half the multiply-adds of direct convolution), else direct on NHWC;
//   - forward only (training = false): the same rule, or, when conv_timing_enabled(), each
//     plan this CPU offers (a bf16 convolution's in float32 as well, and in float32 the matrix
//     product of im2col_conv.h) is built and timed on scratch buffers (two runs, the faster one
//     counts), once per shape per backend; later convs of the same shape reuse the answer.
//
// Training convolutions computing in bf16 on NHWC take their gradients by other primitives where
// oneDNN 2.6 has brgemm kernels for those and not for its convolution backward: pointwise ones by
// matmul (pointwise_grads.h), other stride-1 ones their data gradient by a forward convolution
// (flipped_data_grad.h).
//
// Workspace layout: [oneDNN scratchpad (largest of the primitives)] [x internal]
// [y / dy internal] [weights in the primitive's format, unless constant] [dw in the
// primitive's format]. Backward runs weights before data so dx's internal copy can reuse x's
// region, and reorders the weights again (cheap) rather than keeping forward's copy.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/bf16_choice.h"
#include "backend/cpu/cpu_common.h"
#include "backend/cpu/flipped_data_grad.h"
#include "backend/cpu/im2col_conv.h"
#include "backend/cpu/pointwise_grads.h"

namespace ic::cpu {
namespace {

using dnnl::algorithm;
using dnnl::convolution_backward_data;
using dnnl::convolution_backward_weights;
using dnnl::convolution_forward;
using dnnl::memory;
using dnnl::prop_kind;

// bf16 where asked and the CPU has bf16 convolutions; else float32, which is at least as
// accurate (the backend's description says when bf16 falls back). Training convolutions also
// compute in float32 where bf16 multiply-adds are no faster (bf16_outpaces_f32): their bf16
// activations are widened on the way in and rounded on the way out, as on a CPU without bf16.
// Training then keeps bf16's halved activation memory and traffic for the memory-bound ops
// and the f32 convolutions' speed: on a 2-core Xeon with AVX512_BF16 and no AMX, DenseNet-121
// trained at 4.5 images/sec with bf16 convolutions and 7.1-7.4 with these (f32: 9-10).
// Inference keeps bf16: its convolutions carry the fused post-ops, and widening there cost more
// than it saved (MobileNet v2 at batch 1: 158 images/sec in bf16, 115 widened).
dt compute_type(const Conv2dDesc& d, const DnnlContext& ctx) {
  if (d.compute != DType::bf16 || !ctx.native_bf16) return dt::f32;
  return d.training && !ctx.bf16_training_convolutions ? dt::f32 : dt::bf16;
}

// Winograd pays for its layout conversions only on large maps with enough channels.
bool prefers_winograd(const Conv2dDesc& d, const DnnlContext& ctx) {
  const Shape out = d.output();
  return compute_type(d, ctx) == dt::f32 && d.groups == 1 && d.kernel_h == 3 && d.kernel_w == 3 &&
         d.stride_h == 1 && d.stride_w == 1 && out.h() * out.w() >= 35 * 35 && d.input.c() >= 32 &&
         d.out_channels >= 32;
}

const char* algorithm_name(algorithm alg) {
  switch (alg) {
    case algorithm::convolution_winograd: return "winograd";
    case algorithm::convolution_auto: return "auto";
    default: return "direct";
  }
}

// Appends `d`'s fused depthwise convolution (float32, its bias, TF's SAME padding: oneDNN's
// depthwise post-op pads the same amount on the right where its output needs it) and its
// activation. Throws dnnl::error where the padding differs between the two dimensions.
void append_depthwise(dnnl::post_ops& post, const Conv2dDesc& d) {
  const FusedDepthwise& dw = *d.fused_depthwise;
  const Shape in = d.conv_output();
  const Pads pads = tf_pads(in.h(), in.w(), 3, 3, dw.stride, dw.stride, Padding::same);
  if (pads.top != pads.left)
    throw dnnl::error(dnnl_unimplemented, "a fused depthwise convolution pads both sides alike");
  post.append_dw(dt::f32, dt::f32, dt::f32, 3, dw.stride, pads.top, 0, {1.f});
  append_fused_activation(post, dw.relu, dw.activation);
}

class ConvKernel final : public OpKernel {
 public:
  // Throws dnnl::error when oneDNN has no implementation of `plan` for `d` on this CPU.
  ConvKernel(const Conv2dDesc& d, DnnlContext& ctx, const ConvPlan& plan)
      : d_(d), ctx_(ctx), plan_(plan) {
    x_md_ = nhwc_md(d.input, activation_dt(d.activations));
    y_md_ = nhwc_md(d.output(), activation_dt(d.activations));
    dx_md_ = nhwc_md(d.input);  // gradients are f32 whatever the activations' type
    dy_md_ = nhwc_md(d.output());
    w_hwio_md_ = conv_weights_md(d, dt::f32, d.groups > 1 ? tag::hwigo : tag::hwio);
    build();

    size_t scratch = fwd_pd_.scratchpad_desc().get_size();
    size_t x_bytes = 0, y_bytes = 0;
    if (fwd_pd_.src_desc() != x_md_) x_bytes = fwd_pd_.src_desc().get_size();
    if (fwd_pd_.dst_desc() != y_md_) y_bytes = fwd_pd_.dst_desc().get_size();
    size_t w_bytes = keeps_weights() ? 0 : fwd_pd_.weights_desc().get_size();
    if (d.training && pointwise_) {
      scratch = std::max(scratch, pointwise_->scratchpad_bytes());
      if (pointwise_->dy_desc() != dy_md_)
        y_bytes = std::max(y_bytes, pointwise_->dy_desc().get_size());
      if (d.needs_input_grad) w_bytes = std::max(w_bytes, pointwise_->weights_bytes());
    } else if (d.training) {
      scratch = std::max(scratch, bwd_weights_pd_.scratchpad_desc().get_size());
      if (flipped_) {
        scratch = std::max(scratch, flipped_->scratchpad_bytes());
        w_bytes = std::max(w_bytes, flipped_->weights_bytes());
      } else if (d.needs_input_grad) {
        scratch = std::max(scratch, bwd_data_pd_.scratchpad_desc().get_size());
        if (bwd_data_pd_.diff_src_desc() != dx_md_)
          x_bytes = std::max(x_bytes, bwd_data_pd_.diff_src_desc().get_size());
        w_bytes = std::max(w_bytes, bwd_data_pd_.weights_desc().get_size());
      }
      if (bwd_weights_pd_.diff_dst_desc() != dy_md_)
        y_bytes = std::max(y_bytes, bwd_weights_pd_.diff_dst_desc().get_size());
      if (bwd_weights_pd_.diff_weights_desc() != w_hwio_md_)
        dw_bytes_ = align64(bwd_weights_pd_.diff_weights_desc().get_size());
    }
    scratch_bytes_ = align64(scratch);
    x_int_bytes_ = align64(x_bytes);
    y_int_bytes_ = align64(y_bytes);
    w_bytes_ = align64(w_bytes);
  }

  size_t workspace_bytes() const override {
    return scratch_bytes_ + x_int_bytes_ + y_int_bytes_ + w_bytes_ + dw_bytes_;
  }
  BackwardReads backward_reads() const override { return {true, false}; }
  std::string implementation() const override {
    const bool nhwc = fwd_pd_.src_desc() == memory::desc(x_md_.dims(), plan_.compute, tag::nhwc);
    // Training's other ways to the gradients (gradients_by_matmul, data_grad_by_forward).
    const char* backward = pointwise_ ? " matmul-gradients" : flipped_ ? " forward-dx" : "";
    return std::string(fwd_pd_.impl_info_str()) + " " + algorithm_name(plan_.alg) +
           (nhwc ? " nhwc" : " blocked") + backward + (plan_.compute == dt::bf16 ? " bf16" : "");
  }

  // Two kernels that would run the same primitive on the same layouts.
  bool same_implementation(const ConvKernel& other) const {
    return std::strcmp(fwd_pd_.impl_info_str(), other.fwd_pd_.impl_info_str()) == 0 &&
           fwd_pd_.src_desc() == other.fwd_pd_.src_desc() &&
           fwd_pd_.weights_desc() == other.fwd_pd_.weights_desc() &&
           fwd_pd_.dst_desc() == other.fwd_pd_.dst_desc();
  }

  Status bind(const OpBindings& b) override {
    const size_t params = (d_.has_bias ? 2 : 1) + (d_.fused_depthwise ? 2 : 0);
    IC_RETURN_IF_ERROR(check_bindings("conv2d", b, 1, 1, params, 0));
    if (workspace_bytes() > 0 && !b.workspace)
      return error("conv2d: needs ", workspace_bytes(), " bytes of workspace, got none");
    try {
      bind_memories(b);
    } catch (const dnnl::error& e) {
      return error("conv2d: binding oneDNN memory: ", e.what());
    }
    return Status();
  }

  void forward(const StepContext&) override {
    for (Conversion& conversion : conversions_) {
      if (conversion.target->ready) continue;
      conversion.step.primitive.execute(ctx_.stream, conversion.step.args);
      conversion.target->ready = true;
    }
    run_steps(forward_steps_, ctx_.stream);
  }

  // Timing runs on scratch buffers that go away: their converted weights are not shared.
  void keep_weights_private() { share_weights_ = false; }
  void backward(const StepContext&) override {
    run_steps(backward_steps_, ctx_.stream);
    if (flipped_bound_) flipped_->run(ctx_.stream);
  }

 private:
  // Constant weights in another format than HWIO are converted once into weights_.
  bool keeps_weights() const {
    return !d_.training && d_.constant_weights && fwd_pd_.weights_desc() != w_hwio_md_;
  }

  // Creates the primitives: forward (with the ReLU or activation post-op when fused), and for
  // training the two backward ones.
  void build() {
    const Conv2dDesc& d = d_;
    const dt ct = plan_.compute;
    const tag act = plan_.activations;
    const Pads pads = tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h,
                              d.stride_w, d.padding);
    const memory::dims wdims = w_hwio_md_.dims();
    // y in the arena's type when computing in bf16 (a bf16 arena then needs no conversion),
    // else f32 (converted into a bf16 arena after the primitive).
    const dt yt = ct == dt::bf16 ? activation_dt(d.activations) : dt::f32;
    const memory::desc x(x_md_.dims(), ct, act), dy(y_md_.dims(), ct, act);
    const memory::desc y(y_md_.dims(), yt, act), dx(x_md_.dims(), dt::f32, act);
    const memory::desc w_any(wdims, ct, tag::any), dw_any(wdims, dt::f32, tag::any);
    const memory::desc b =
        d.has_bias ? memory::desc({d.out_channels}, dt::f32, tag::x) : memory::desc();
    const memory::dims strides{d.stride_h, d.stride_w};
    const memory::dims pad_l{pads.top, pads.left}, pad_r{pads.bottom, pads.right};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (!d.training) {
      dnnl::primitive_attr fwd_attr = attr;
      dnnl::post_ops post;
      append_fused_activation(post, d.fused_relu, d.fused_activation);
      // With a fused depthwise convolution the primitive is described by the pointwise one's
      // output and writes the depthwise one's.
      memory::desc own_y = y;
      if (d.fused_depthwise) {
        append_depthwise(post, d);
        own_y = memory::desc(nhwc_md(d.conv_output()).dims(), yt, act);
      }
      if (post.len() > 0) fwd_attr.set_post_ops(post);
      fwd_pd_ = convolution_forward::primitive_desc(
          convolution_forward::desc(prop_kind::forward_inference, plan_.alg, x, w_any, b, own_y,
                                    strides, pad_l, pad_r),
          fwd_attr, ctx_.engine);
      if (fwd_pd_.dst_desc().dims() != y_md_.dims())
        throw dnnl::error(dnnl_unimplemented, "the fused depthwise output has another shape");
      fwd_ = convolution_forward(fwd_pd_);
      return;
    }
    fwd_pd_ = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_training, plan_.alg, x, w_any, b, y, strides,
                                  pad_l, pad_r),
        attr, ctx_.engine);
    fwd_ = convolution_forward(fwd_pd_);
    if (gradients_by_matmul()) {
      try {
        pointwise_.emplace(d, ct, ctx_.engine);
        return;
      } catch (const dnnl::error&) {
        // no matmul for these types here: the convolution's own backward below
      }
    }
    bwd_weights_pd_ = convolution_backward_weights::primitive_desc(
        convolution_backward_weights::desc(plan_.alg, x, dw_any, b, dy, strides, pad_l, pad_r),
        attr, ctx_.engine, fwd_pd_);
    if (d.needs_input_grad && data_grad_by_forward()) {
      try {
        flipped_.emplace(d, bwd_weights_pd_.diff_dst_desc(), ctx_.engine);
      } catch (const dnnl::error&) {
        // no such forward convolution here: the convolution's own backward below
      }
    }
    if (d.needs_input_grad && !flipped_) {
      bwd_data_pd_ = convolution_backward_data::primitive_desc(
          convolution_backward_data::desc(plan_.alg, dx, w_any, dy, strides, pad_l, pad_r), attr,
          ctx_.engine, fwd_pd_);
      bwd_data_ = convolution_backward_data(bwd_data_pd_);
    }
    bwd_weights_ = convolution_backward_weights(bwd_weights_pd_);
    // The workspace plan assumes forward and backward agree on the internal layouts.
    if (!internal_layouts_consistent())
      throw dnnl::error(dnnl_unimplemented, "forward and backward want different layouts");
  }

  // A pointwise training convolution computing in bf16 on NHWC takes its gradients from
  // PointwiseGrads' matrix products. Only in bf16: in float32 oneDNN 2.6's 1x1 backward kernels
  // and its matmul were even on the same shapes (AVX-512, 2 cores), one faster here, the other
  // there, and bf16 training convolutions are bf16 only where bf16 outpaces f32 (AMX). A fixed
  // rule, not timing: training must run the same arithmetic from run to run (bit-exact resume).
  bool gradients_by_matmul() const { return direct_bf16_nhwc() && PointwiseGrads::applies(d_); }

  // The data gradient of any other stride-1 one computing in bf16 on NHWC comes from
  // FlippedDataGrad's forward convolution, where dy is NHWC as that convolution reads it. Only in
  // bf16 for the same reason, and a fixed rule for the same reason.
  bool data_grad_by_forward() const {
    return direct_bf16_nhwc() && FlippedDataGrad::applies(d_) &&
           bwd_weights_pd_.diff_dst_desc() == memory::desc(dy_md_.dims(), dt::bf16, tag::nhwc);
  }

  bool direct_bf16_nhwc() const {
    return plan_.compute == dt::bf16 && plan_.alg == algorithm::convolution_direct &&
           plan_.activations == tag::nhwc;
  }

  bool internal_layouts_consistent() const {
    if (fwd_pd_.src_desc() != bwd_weights_pd_.src_desc()) return false;
    if (!d_.needs_input_grad || flipped_) return true;
    return bwd_data_pd_.diff_dst_desc() == bwd_weights_pd_.diff_dst_desc();
  }

  // Builds forward's steps: [x to internal] [w to the primitive's format], conv, [y to
  // arena]; and backward's: [dy to internal] [x to internal] weights grad [dw to HWIO], then
  // when dx is wanted: w to bwd's format, data grad [dx to arena].
  void bind_memories(const OpBindings& b) {
    conversions_.clear();  // bind may be called again with other pointers
    forward_steps_.clear();
    backward_steps_.clear();
    flipped_bound_ = false;
    const dnnl::engine& eng = ctx_.engine;
    auto* ws = static_cast<char*>(b.workspace);
    char* x_region = ws + scratch_bytes_;
    char* y_region = x_region + x_int_bytes_;
    char* w_region = y_region + y_int_bytes_;
    char* dw_region = w_region + w_bytes_;

    const memory x_arena = wrap(x_md_, ctx_, b.inputs[0]);
    const memory w_hwio(w_hwio_md_, eng, b.params[0]);
    const memory x = through_copy(x_arena, fwd_pd_.src_desc(), x_region, forward_steps_, true);
    memory w_fwd = w_hwio;
    if (keeps_weights()) {
      // Converted at the first forward, when the values are there.
      const memory::desc format = fwd_pd_.weights_desc();
      w_fwd = converted(w_hwio, format);
    } else if (d_.training || !d_.constant_weights) {
      w_fwd = memory(fwd_pd_.weights_desc(), eng, w_region);
      forward_steps_.push_back(reorder_step(w_hwio, w_fwd));
    }
    const memory y_arena(y_md_, eng, b.outputs[0]);
    std::vector<DnnlStep> y_out;
    const memory y = through_copy(y_arena, fwd_pd_.dst_desc(), y_region, y_out, false);
    DnnlStep conv{fwd_,
                  {{DNNL_ARG_SRC, x},
                   {DNNL_ARG_WEIGHTS, w_fwd},
                   {DNNL_ARG_DST, y},
                   {DNNL_ARG_SCRATCHPAD, memory(fwd_pd_.scratchpad_desc(), eng, ws)}}};
    if (d_.has_bias) conv.args[DNNL_ARG_BIAS] = memory(fwd_pd_.bias_desc(), eng, b.params[1]);
    if (d_.fused_depthwise) {  // its weights [3,3,1,C] (grouped HWIO) and bias [C]
      constexpr int kWeights = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
      constexpr int kBias = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS;
      const memory::dim channels = d_.out_channels;
      const memory natural(memory::desc({channels, 1, 1, 3, 3}, dt::f32, tag::hwigo), eng,
                           b.params[2]);
      conv.args[kWeights] =
          converted(natural, fwd_pd_.query_md(dnnl::query::exec_arg_md, kWeights));
      conv.args[kBias] =
          memory(fwd_pd_.query_md(dnnl::query::exec_arg_md, kBias), eng, b.params[3]);
    }
    forward_steps_.push_back(std::move(conv));
    for (DnnlStep& step : y_out) forward_steps_.push_back(std::move(step));

    if (!d_.training || b.output_grads.empty() || !b.output_grads[0]) return;  // forward only
    if (b.param_grads.size() != b.params.size())
      throw dnnl::error(dnnl_invalid_arguments, "one gradient per parameter expected");
    const memory dy_arena = wrap(dy_md_, ctx_, b.output_grads[0]);
    if (pointwise_) {
      bind_pointwise_backward(b, dy_arena, x_arena, ws, x_region, y_region, w_region);
      return;
    }
    const memory dy =
        through_copy(dy_arena, bwd_weights_pd_.diff_dst_desc(), y_region, backward_steps_, true);
    // x's internal copy may have been overwritten by other ops since forward: redo it.
    through_copy(x_arena, fwd_pd_.src_desc(), x_region, backward_steps_, true);
    const memory dw_hwio(w_hwio_md_, eng, b.param_grads[0]);
    std::vector<DnnlStep> dw_out;
    const memory dw =
        through_copy(dw_hwio, bwd_weights_pd_.diff_weights_desc(), dw_region, dw_out, false);
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
    if (flipped_) {
      flipped_->bind(dy, b.params[0], w_region, b.input_grads[0], ws);
      flipped_bound_ = true;
      return;
    }
    const memory w_bwd(bwd_data_pd_.weights_desc(), eng, w_region);
    backward_steps_.push_back(reorder_step(w_hwio, w_bwd));
    const memory dx_arena(dx_md_, eng, b.input_grads[0]);
    std::vector<DnnlStep> dx_out;
    const memory dx = through_copy(dx_arena, bwd_data_pd_.diff_src_desc(), x_region, dx_out, false);
    backward_steps_.push_back(
        {bwd_data_,
         {{DNNL_ARG_DIFF_DST, dy},
          {DNNL_ARG_WEIGHTS, w_bwd},
          {DNNL_ARG_DIFF_SRC, dx},
          {DNNL_ARG_SCRATCHPAD, memory(bwd_data_pd_.scratchpad_desc(), eng, ws)}}});
    for (DnnlStep& step : dx_out) backward_steps_.push_back(std::move(step));
  }

  // The constant weights `natural` in `format`: the backend's shared copy, converted at the
  // first forward that finds it unconverted.
  memory converted(const memory& natural, const memory::desc& format) {
    auto target = converted_weights(ctx_, natural.get_data_handle(), format, "", format.get_size(),
                                    share_weights_);
    const memory packed(format, ctx_.engine, target->data.get());
    conversions_.push_back({std::move(target), reorder_step(natural, packed)});
    return packed;
  }

  // Backward by PointwiseGrads: [dy to bf16] [x to bf16] weight (and bias) gradient, then when
  // dx is wanted: w to the product's format, data gradient straight into the arena.
  void bind_pointwise_backward(const OpBindings& b, const memory& dy_arena, const memory& x_arena,
                               char* ws, char* x_region, char* y_region, char* w_region) {
    const memory dy =
        through_copy(dy_arena, pointwise_->dy_desc(), y_region, backward_steps_, true);
    const memory x = through_copy(x_arena, fwd_pd_.src_desc(), x_region, backward_steps_, true);
    pointwise_->append_weight_grads(backward_steps_, x, dy, dy_arena, b.param_grads[0],
                                    d_.has_bias ? b.param_grads[1] : nullptr, ws);
    if (!d_.needs_input_grad || b.input_grads.empty() || !b.input_grads[0]) return;
    const memory w_hwio(w_hwio_md_, ctx_.engine, b.params[0]);
    pointwise_->append_data_grad(backward_steps_, dy, w_hwio, w_region, b.input_grads[0], ws);
  }

  Conv2dDesc d_;
  DnnlContext& ctx_;
  ConvPlan plan_;
  memory::desc x_md_, y_md_, w_hwio_md_;  // the arena's layouts
  memory::desc dx_md_, dy_md_;            // the gradients' (f32)
  convolution_forward::primitive_desc fwd_pd_;
  convolution_forward fwd_;
  convolution_backward_data::primitive_desc bwd_data_pd_;
  convolution_backward_data bwd_data_;
  convolution_backward_weights::primitive_desc bwd_weights_pd_;
  convolution_backward_weights bwd_weights_;
  std::optional<PointwiseGrads> pointwise_;  // gradients by matmul instead (gradients_by_matmul)
  std::optional<FlippedDataGrad> flipped_;   // dx by forward convolution (data_grad_by_forward)
  bool flipped_bound_ = false;
  size_t scratch_bytes_ = 0, x_int_bytes_ = 0, y_int_bytes_ = 0, w_bytes_ = 0, dw_bytes_ = 0;
  // Constant weights converted into the primitive's format at the first forward.
  struct Conversion {
    std::shared_ptr<ConvertedWeights> target;
    DnnlStep step;
  };
  std::vector<Conversion> conversions_;
  bool share_weights_ = true;
  std::vector<DnnlStep> forward_steps_, backward_steps_;
};

// The kernel that runs `plan` for `d`. share_weights: false for one timed on scratch buffers.
// Throws dnnl::error when oneDNN has no implementation of `plan` for `d` on this CPU.
std::unique_ptr<OpKernel> plan_kernel(const Conv2dDesc& d, DnnlContext& ctx, const ConvPlan& plan,
                                      bool share_weights) {
  if (plan.by_matmul) return make_im2col_conv(d, ctx, share_weights);
  auto kernel = std::make_unique<ConvKernel>(d, ctx, plan);
  if (!share_weights) kernel->keep_weights_private();
  return kernel;
}

// The fixed rule: Winograd where it is preferred and this CPU has it, else direct on NHWC.
std::unique_ptr<ConvKernel> default_kernel(const Conv2dDesc& d, DnnlContext& ctx) {
  if (prefers_winograd(d, ctx)) {
    try {
      return std::make_unique<ConvKernel>(
          d, ctx, ConvPlan{algorithm::convolution_winograd, dt::f32, tag::any});
    } catch (const dnnl::error&) {
      // no Winograd implementation on this CPU (or none consistent with backward): direct
    }
  }
  return std::make_unique<ConvKernel>(
      d, ctx, ConvPlan{algorithm::convolution_direct, compute_type(d, ctx), tag::nhwc});
}

// What the timing depends on: everything but the pointers.
// A fused depthwise convolution's part of plan_key.
std::string fused_depthwise_key(const Conv2dDesc& d) {
  if (!d.fused_depthwise) return "";
  const FusedDepthwise& dw = *d.fused_depthwise;
  return " depthwise s" + std::to_string(dw.stride) + (dw.relu ? " relu" : "") +
         (dw.activation ? std::string(" ") + activation_name(*dw.activation) : "");
}

std::string plan_key(const Conv2dDesc& d) {
  return d.input.str() + " " + std::to_string(d.out_channels) + " g" + std::to_string(d.groups) +
         " " + std::to_string(d.kernel_h) + "x" + std::to_string(d.kernel_w) + " s" +
         std::to_string(d.stride_h) + "x" + std::to_string(d.stride_w) +
         (d.padding == Padding::same ? " same" : " valid") + (d.has_bias ? " bias" : "") +
         (d.fused_relu ? " relu" : "") +
         (d.fused_activation ? std::string(" ") + activation_name(*d.fused_activation) : "") +
         (d.constant_weights ? " const" : "") + " " + dtype_name(d.compute) + " in " +
         dtype_name(d.activations) + fused_depthwise_key(d);
}

// The layer, whatever batch it runs at: plan_key without the batch.
std::string layer_key(Conv2dDesc d) {
  d.input[0] = 0;
  return plan_key(d);
}

// Seconds of one forward of the bound `kernel`: the fastest of two runs or more. The first run
// pays for the weights' conversion and first touches; later ones are clean. Small kernels (a
// few hundred microseconds at batch 1) run more often, up to 8 times in a few milliseconds: on
// a shared machine one or two runs of them picked by chance between plans within 10% of each
// other.
double fastest_forward_seconds(OpKernel& kernel, DnnlContext& ctx) {
  const StepContext step;
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int run = 0; run < 2 || (run < 8 && total < 4e-3); ++run) {
    const auto start = std::chrono::steady_clock::now();
    kernel.forward(step);
    ctx.stream.wait();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, seconds);
    if (run > 0) total += seconds;
  }
  return best;
}

// Seconds of one forward of `kernel`, a kernel for `d`: the fastest of fastest_forward_seconds
// runs, on scratch buffers.
double time_forward(OpKernel& kernel, const Conv2dDesc& d, DnnlContext& ctx) {
  auto filled = [](size_t count, float value) {
    AlignedBuffer buffer = aligned_buffer(count * sizeof(float));
    std::fill_n(static_cast<float*>(buffer.get()), count, value);
    return buffer;
  };
  const auto weights = static_cast<size_t>(d.weight_count());
  AlignedBuffer x = filled(static_cast<size_t>(d.input.numel()), 0.5f);
  AlignedBuffer w = filled(weights, 0.01f);
  AlignedBuffer bias = filled(static_cast<size_t>(d.out_channels), 0.f);
  AlignedBuffer y = filled(static_cast<size_t>(d.output().numel()), 0.f);
  AlignedBuffer workspace = aligned_buffer(std::max<size_t>(kernel.workspace_bytes(), 64));
  OpBindings b;
  b.inputs = {x.get()};
  b.outputs = {y.get()};
  b.params = {w.get()};
  if (d.has_bias) b.params.push_back(bias.get());
  AlignedBuffer dw_w = filled(static_cast<size_t>(9 * d.out_channels), 0.01f);
  if (d.fused_depthwise) b.params.insert(b.params.end(), {dw_w.get(), bias.get()});
  b.workspace = workspace.get();
  if (!kernel.bind(b).ok()) return std::numeric_limits<double>::infinity();
  return fastest_forward_seconds(kernel, ctx);
}

// Seconds of the Cast op that converts `shape`'s values from `from` to `to` (f32 <-> bf16), on
// scratch buffers: what the precision pass adds at each edge of a float32 region.
double time_cast(const Shape& shape, DType from, DType to, DnnlContext& ctx) {
  Result<std::unique_ptr<OpKernel>> cast = make_cast(CastDesc{shape, from, to}, ctx);
  if (!cast.ok()) return 0;
  const size_t bytes = static_cast<size_t>(shape.numel()) * sizeof(float);
  AlignedBuffer x = aligned_buffer(bytes), y = aligned_buffer(bytes);
  std::memset(x.get(), 0, bytes);
  OpBindings b;
  b.inputs = {x.get()};
  b.outputs = {y.get()};
  if (!(*cast)->bind(b).ok()) return 0;
  return fastest_forward_seconds(**cast, ctx);
}

// Every plan worth trying for `d` in the compute types `types`; oneDNN refuses those it has no
// implementation of. by_matmul set: only im2col_conv.h's product (true) or only oneDNN's
// convolutions (false).
std::vector<ConvPlan> candidate_plans(const Conv2dDesc& d, const std::vector<dt>& types,
                                      std::optional<bool> by_matmul) {
  std::vector<ConvPlan> plans;
  for (const dt ct : types) {
    if (ct == dt::f32 && im2col_conv_applies(d) && by_matmul.value_or(true))
      plans.push_back({algorithm::convolution_direct, ct, tag::nhwc, /*by_matmul=*/true});
    if (by_matmul.value_or(false)) continue;
    plans.push_back({algorithm::convolution_direct, ct, tag::nhwc});
    plans.push_back({algorithm::convolution_direct, ct, tag::any});
    plans.push_back({algorithm::convolution_auto, ct, tag::any});
    if (ct == dt::f32 && d.groups == 1 && d.kernel_h == 3 && d.kernel_w == 3 && d.stride_h == 1 &&
        d.stride_w == 1)
      plans.push_back({algorithm::convolution_winograd, ct, tag::any});
  }
  // The product last: it must beat the best convolution by kProductMargin.
  std::stable_partition(plans.begin(), plans.end(), [](const ConvPlan& p) { return !p.by_matmul; });
  return plans;
}

// The plans timed so far, shared by every CPU backend of the process: two graphs of one shape
// (two loaded versions of a model, a server and classify in one process) then run the same
// implementation and give the same answers bit for bit. Timing holds the lock: compiles that
// race time one after the other rather than against each other.
struct PlanCache {
  std::mutex mutex;
  std::map<std::string, ConvPlan> plans;
  std::map<std::string, bool> fused_faster;  // by plan_key of the fused desc
  std::map<std::string, dt> compute;         // by layer_key
  // By layer_key: whether the layer runs as im2col_conv.h's product, settled at the first batch
  // size timed like its compute type. The product sums in another order than oneDNN's
  // convolutions, so a layer that took it at one batch size and not at another would give an
  // image other roundings in a batch run as slices (InferenceRunner) than alone.
  std::map<std::string, bool> by_matmul;
};

// The compute types to time for `d`. A bf16 convolution is also tried in float32 on its
// widened activations: without AMX, one bf16 dot product a cycle does no more than two f32
// FMAs, and depthwise convolutions do not use it at all, so layer by layer either may win
// (EfficientNet-B0 at batch 1 on a 2-core Xeon with AVX512_BF16: every kind of convolution took
// 1.3-1.7x longer in bf16 than in f32). The first batch size timed settles the type for the
// layer's other batch sizes, so that an image gets the same answer whatever batch it is in
// (a server's graphs of 1, 8, 32 ...); only the algorithm and layout are timed again.
std::vector<dt> compute_types(const Conv2dDesc& d, const DnnlContext& ctx, const PlanCache& cache,
                              const std::string& layer) {
  const dt asked = compute_type(d, ctx);
  if (asked != dt::bf16) return {asked};
  if (auto settled = cache.compute.find(layer); settled != cache.compute.end())
    return {settled->second};
  return {dt::bf16, dt::f32};
}

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

// How much faster than the best oneDNN convolution im2col_conv.h's product must time to be taken.
constexpr double kProductMargin = 1.15;

struct TimedPlan {
  ConvPlan plan;
  double seconds = 0;
};

// The fastest of `d`'s plans in the compute types `types`, timed now (the cache's lock held).
Result<TimedPlan> fastest_plan(const Conv2dDesc& d, DnnlContext& ctx, const std::vector<dt>& types,
                               std::optional<bool> by_matmul) {
  std::vector<std::unique_ptr<OpKernel>> timed;
  TimedPlan best{{}, std::numeric_limits<double>::infinity()};
  for (const ConvPlan& plan : candidate_plans(d, types, by_matmul)) {
    std::unique_ptr<OpKernel> kernel;
    try {
      kernel = plan_kernel(d, ctx, plan, /*share_weights=*/false);
    } catch (const dnnl::error&) {
      continue;  // not on this CPU
    }
    const auto* conv = dynamic_cast<const ConvKernel*>(kernel.get());
    const bool duplicate = conv && std::any_of(timed.begin(), timed.end(), [&](const auto& other) {
                             const auto* timed_conv = dynamic_cast<const ConvKernel*>(other.get());
                             return timed_conv && conv->same_implementation(*timed_conv);
                           });
    if (duplicate) continue;
    const double seconds = time_forward(*kernel, d, ctx);
    // The product must win clearly: timed alone it looks better than it runs among the other
    // ops (Inception v3 at batch 1, 2-core AMD EPYC Zen 2: 1x1 and 1x7 convolutions it won by a
    // few percent here ran 1-20% slower than oneDNN's convolution in the network).
    const double charged = plan.by_matmul ? seconds * kProductMargin : seconds;
    if (charged < best.seconds) best = {plan, charged};
    timed.push_back(std::move(kernel));
  }
  if (timed.empty() || best.seconds == std::numeric_limits<double>::infinity())
    return error("conv2d: oneDNN has no ", dtype_name(d.compute), " implementation for input ",
                 d.input.str(), ", ", d.out_channels, " filters, kernel ", d.kernel_h, "x",
                 d.kernel_w);
  return best;
}

// Whether `layer` runs as a product, where an earlier batch size settled it.
std::optional<bool> settled_product(const PlanCache& cache, const std::string& layer) {
  const auto found = cache.by_matmul.find(layer);
  if (found == cache.by_matmul.end()) return std::nullopt;
  return found->second;
}

// The fastest plan for `d`, timed once per shape in the process.
Result<ConvPlan> timed_plan(const Conv2dDesc& d, DnnlContext& ctx) {
  const std::string key = plan_key(d);
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (auto known = cache.plans.find(key); known != cache.plans.end()) return known->second;
  const std::string layer = layer_key(d);
  IC_ASSIGN_OR_RETURN(
      const TimedPlan best,
      fastest_plan(d, ctx, compute_types(d, ctx, cache, layer), settled_product(cache, layer)));
  cache.plans.emplace(key, best.plan);
  cache.compute.emplace(layer, best.plan.compute);
  cache.by_matmul.emplace(layer, best.plan.by_matmul);
  return best.plan;
}

// Backend::conv_compute_type for a timed bf16 convolution on bf16 activations: its fastest bf16
// plan against the fastest float32 one on float32 activations (what the graph runs if float32
// wins: no conversions on the way in and out). Settled per layer as timed_plan's choice is, at
// the first batch size asked.
Result<DType> timed_compute_type(const Conv2dDesc& d, DnnlContext& ctx) {
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const std::string layer = layer_key(d);
  if (auto settled = cache.compute.find(layer); settled != cache.compute.end())
    return settled->second == dt::bf16 ? DType::bf16 : DType::f32;
  Conv2dDesc wide = d;
  wide.compute = wide.activations = DType::f32;
  // A depthwise layer's bf16 side is depthwise_bf16_kernel.cc's loop, not a oneDNN plan.
  TimedPlan in_bf16;
  if (depthwise_bf16_applies(d)) {
    in_bf16.seconds = time_forward(*make_depthwise_bf16(d, ctx, false), d, ctx);
  } else {
    IC_ASSIGN_OR_RETURN(in_bf16, fastest_plan(d, ctx, {dt::bf16}, false));
  }
  const std::string wide_layer = layer_key(wide);
  IC_ASSIGN_OR_RETURN(const TimedPlan in_f32,
                      fastest_plan(wide, ctx, {dt::f32}, settled_product(cache, wide_layer)));
  cache.plans.emplace(plan_key(wide), in_f32.plan);
  cache.compute.emplace(wide_layer, dt::f32);
  cache.by_matmul.emplace(wide_layer, in_f32.plan.by_matmul);
  // Where bf16 multiply-adds outpace float32's (AMX), most layers stay bf16, so a layer kept
  // in float32 is most likely an island: the Casts of its input and its output are part of its
  // cost. They are timed, not assumed: on a 2-core AMX Xeon MobileNet v2's depthwise layers
  // timed faster in float32 alone, and their 32 Casts then took 35% of its bf16 inference.
  // There bf16 is also the side that stays on a tie (bf16_choice.h).
  const bool amx = bf16_outpaces_f32();
  const double casts = amx ? time_cast(d.input, DType::bf16, DType::f32, ctx) +
                                 time_cast(d.output(), DType::f32, DType::bf16, ctx)
                           : 0;
  const bool bf16 = keeps_bf16(in_bf16.seconds, in_f32.seconds, casts, amx);
  if (bf16 && !depthwise_bf16_applies(d)) cache.plans.emplace(plan_key(d), in_bf16.plan);
  cache.compute.emplace(layer, bf16 ? dt::bf16 : dt::f32);
  return bf16 ? DType::bf16 : DType::f32;
}

}  // namespace

// The weights' dimensions as oneDNN takes them: {Co, Ci, kh, kw}, or grouped {G, Co/G, Ci/G, kh,
// kw}, whose `hwigo` order is the arena's [kh,kw,Ci/G,Co] with Co = (g, Co/G) (ops.h).
memory::desc conv_weights_md(const Conv2dDesc& d, dt type, tag format) {
  if (d.groups == 1)
    return memory::desc({d.out_channels, d.input.c(), d.kernel_h, d.kernel_w}, type, format);
  return memory::desc(
      {d.groups, d.out_channels / d.groups, d.in_channels_per_group(), d.kernel_h, d.kernel_w},
      type, format);
}

bool bf16_outpaces_f32() {
  if (const char* env = std::getenv("IC_BF16_TRAINING_CONVS"); env != nullptr) {
    if (std::string_view(env) == "bf16") return true;
    if (std::string_view(env) == "f32") return false;
  }
  const auto amx = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_amx);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & amx) == amx;
}

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

namespace {

Status check_conv_desc(const Conv2dDesc& d) {
  if (d.input.rank() != 4 || d.out_channels <= 0 || d.kernel_h <= 0 || d.kernel_w <= 0 ||
      d.stride_h <= 0 || d.stride_w <= 0 || d.groups <= 0 || d.input.c() % d.groups != 0 ||
      d.out_channels % d.groups != 0)
    return error("conv2d: bad description: input ", d.input.str(), ", ", d.out_channels,
                 " filters in ", d.groups, " groups, kernel ", d.kernel_h, "x", d.kernel_w,
                 ", stride ", d.stride_h, "x", d.stride_w);
  const Shape out = d.output();
  if (out.h() <= 0 || out.w() <= 0)
    return error("conv2d: input ", d.input.str(), " is smaller than the ", d.kernel_h, "x",
                 d.kernel_w, " kernel");
  IC_RETURN_IF_ERROR(check_conv_post_ops(d));
  if (d.int8) return Status();  // int8 replaces `compute`
  if (d.compute != DType::f32 && d.compute != DType::bf16)
    return error("conv2d: compute type ", dtype_name(d.compute), " is not supported");
  if (d.activations != DType::f32 && d.activations != DType::bf16)
    return error("conv2d: activations in ", dtype_name(d.activations), " (f32 or bf16 only)");
  return Status();
}

// A pointwise convolution with a fused depthwise one: direct, float32, not timed, on oneDNN's
// blocked layout (x and y converted inside; the pointwise output, the large one, never leaves
// the primitive). Not on NHWC: oneDNN 2.6's fused kernel there wrote wrong values for some
// shapes (MobileNet v2's 16->96 expansion on 48x48 maps at batch 3: zeros where 5.0 was due),
// where its blocked one computes them right (tests/backend: CpuFusedDepthwise).
Result<std::unique_ptr<OpKernel>> make_fused_depthwise(const Conv2dDesc& d, DnnlContext& ctx,
                                                       bool share_weights = true) {
  if (d.compute != DType::f32 || d.activations != DType::f32)
    return error(
        "conv2d: a fused depthwise convolution computes in float32 on float32 "
        "activations here, not ",
        dtype_name(d.compute), " on ", dtype_name(d.activations));
  try {
    return plan_kernel(d, ctx, ConvPlan{algorithm::convolution_direct, dt::f32, tag::any},
                       share_weights);
  } catch (const dnnl::error& e) {
    return error(
        "conv2d: oneDNN cannot fuse the depthwise convolution after the pointwise one "
        "on input ",
        d.input.str(), ": ", e.what());
  }
}

}  // namespace

bool fuses_depthwise(const Conv2dDesc& d, DnnlContext& ctx) {
  if (!d.fused_depthwise || !check_conv_desc(d).ok()) return false;
  Result<std::unique_ptr<OpKernel>> fused = make_fused_depthwise(d, ctx, /*share_weights=*/false);
  if (!fused.ok()) return false;
  if (!conv_timing_enabled(d)) return true;
  // Timed: the fused kernel against the two convolutions apart, each on its own timed plan.
  // The fusion saves the pointwise output's trip through memory, which pays on large maps,
  // but the blocked layout it runs on costs two conversions, which do not pay on small ones
  // (MobileNet v2 on a 2-core Zen 2: batch 32 184 -> 205 images/sec fused, batch 1 176 -> 150).
  Conv2dDesc pointwise = d;
  pointwise.fused_depthwise.reset();
  Conv2dDesc depthwise = d;
  depthwise.fused_depthwise.reset();
  depthwise.input = d.conv_output();
  depthwise.out_channels = depthwise.groups = d.out_channels;
  depthwise.kernel_h = depthwise.kernel_w = 3;
  depthwise.stride_h = depthwise.stride_w = d.fused_depthwise->stride;
  depthwise.padding = Padding::same;
  depthwise.fused_relu = d.fused_depthwise->relu;
  depthwise.fused_activation = d.fused_depthwise->activation;
  PlanCache& cache = plan_cache();
  const std::string key = plan_key(d);
  const auto known = [&]() -> std::optional<bool> {
    const auto found = cache.fused_faster.find(key);
    if (found == cache.fused_faster.end()) return std::nullopt;
    return found->second;
  };
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (const std::optional<bool> answer = known()) return *answer;
  }
  // Built without the lock: make_conv2d times their plans under it.
  Result<std::unique_ptr<OpKernel>> first = make_conv2d(pointwise, ctx);
  Result<std::unique_ptr<OpKernel>> second = make_conv2d(depthwise, ctx);
  if (!first.ok() || !second.ok()) return true;
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (const std::optional<bool> answer = known()) return *answer;
  const double together = time_forward(**fused, d, ctx);
  const double apart =
      time_forward(**first, pointwise, ctx) + time_forward(**second, depthwise, ctx);
  cache.fused_faster.emplace(key, together < apart);
  return together < apart;
}

Result<std::unique_ptr<OpKernel>> make_conv2d(const Conv2dDesc& d, DnnlContext& ctx) {
  IC_RETURN_IF_ERROR(check_conv_desc(d));
  if (d.int8) return make_int8_conv2d(d, ctx);
  if (d.fused_depthwise) return make_fused_depthwise(d, ctx);
  if (depthwise_bf16_applies(d) && compute_type(d, ctx) == dt::bf16) {
    // The layer's type, settled by timing at its first batch size: float32 goes on below.
    DType type = DType::bf16;
    if (conv_timing_enabled(d)) {
      IC_ASSIGN_OR_RETURN(type, timed_compute_type(d, ctx));
    }
    if (type == DType::bf16) return make_depthwise_bf16(d, ctx);
  }
  if (!conv_timing_enabled(d)) return std::unique_ptr<OpKernel>(default_kernel(d, ctx));
  IC_ASSIGN_OR_RETURN(const ConvPlan plan, timed_plan(d, ctx));
  try {
    return plan_kernel(d, ctx, plan, /*share_weights=*/true);
  } catch (const dnnl::error& e) {
    return error("conv2d: building the timed plan for input ", d.input.str(), ": ", e.what());
  }
}

Result<DType> conv_compute_type(const Conv2dDesc& d, DnnlContext& ctx) {
  IC_RETURN_IF_ERROR(check_conv_desc(d));
  if (d.int8) return error("conv2d: an int8 convolution has no float compute type");
  if (compute_type(d, ctx) != dt::bf16) return DType::f32;
  if (!conv_timing_enabled(d)) return DType::bf16;
  return timed_compute_type(d, ctx);
}

}  // namespace ic::cpu
