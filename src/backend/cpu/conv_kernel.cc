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
// Which plan (a ConvPlan) a convolution runs is conv_choice.cc's choice.
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
#include "backend/cpu/conv_kernel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/flipped_data_grad.h"
#include "backend/cpu/im2col_conv.h"
#include "backend/cpu/pointwise_grads.h"
#include "backend/cpu/winograd_conv.h"
#include "backend/cpu/winograd_toom_cook_conv.h"

namespace ic::cpu {

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

namespace {

// Winograd pays for its layout conversions only on large maps with enough channels.
bool prefers_winograd(const Conv2dDesc& d, const DnnlContext& ctx) {
  const Shape out = d.output();
  return compute_type(d, ctx) == dt::f32 && d.groups == 1 && d.kernel_h == 3 && d.kernel_w == 3 &&
         d.stride_h == 1 && d.stride_w == 1 && out.h() * out.w() >= 35 * 35 && d.input.c() >= 32 &&
         d.out_channels >= 32;
}

// Without AVX-512, oneDNN's direct convolutions (jit:avx2) with a kernel wider than 1x1 run
// faster on its blocked layout than on NHWC, by more than the conversions in and out cost; its
// 1x1 ones do not. Training, batch 32, forward + both gradients with the conversions, on a 2-core
// AMD EPYC Zen 2: DenseNet-121's 3x3 128->32 on 56x56 177 -> 130 ms, Inception v3's 3x3 32->64 on
// 147x147 613 -> 445 ms and 80->192 on 73x73 1043 -> 802 ms, ResNet-50's 3x3 64->64 on 56x56 162
// -> 126 ms; smaller maps gain 3-15%, while 1x1 ones lose 7-15% (256->128 on 56x56: 123 -> 140
// ms), and so do the stems on 3 input channels, whose large outputs the conversions dominate
// (MobileNet v2's 3x3 3->32 on 224x224: 17.7 -> 20.9 ms). With AVX-512 the NHWC kernels are
// oneDNN's brgemm ones, and this rule is not applied.
bool prefers_blocked(const Conv2dDesc& d, const DnnlContext& ctx) {
  return !onednn_runs_avx512() && compute_type(d, ctx) == dt::f32 && d.groups == 1 &&
         d.kernel_h * d.kernel_w > 1 && d.input.c() >= 8 && !d.fused_depthwise;
}

const char* algorithm_name(algorithm alg) {
  switch (alg) {
    case algorithm::convolution_winograd: return "winograd";
    case algorithm::convolution_auto: return "auto";
    default: return "direct";
  }
}

// Appends `d`'s fused depthwise convolution (float32, its bias, TF's SAME padding: oneDNN's
// depthwise post-op pads the same amount on the right where its output needs it; one left
// padding for both dimensions, which check_conv_post_ops makes sure of) and its activation.
void append_depthwise(dnnl::post_ops& post, const Conv2dDesc& d) {
  const FusedDepthwise& dw = *d.fused_depthwise;
  const Shape in = d.conv_output();
  const Pads pads = tf_pads(in.h(), in.w(), 3, 3, dw.stride, dw.stride, Padding::same);
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
    conversions_.run(ctx_.stream);
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
      // oneDNN derives the depthwise output's size itself; it must be TF's (Conv2dDesc::output).
      if (fwd_pd_.dst_desc().dims() != y_md_.dims())
        throw dnnl::error(dnnl_invalid_arguments,
                          "oneDNN's depthwise post-op writes another output size than TF's SAME");
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
      w_fwd = conversions_.add(ctx_, w_hwio, format, share_weights_);
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
      conv.args[kWeights] = conversions_.add(
          ctx_, natural, fwd_pd_.query_md(dnnl::query::exec_arg_md, kWeights), share_weights_);
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
  WeightConversions conversions_;  // constant weights in the primitive's formats
  bool share_weights_ = true;
  std::vector<DnnlStep> forward_steps_, backward_steps_;
};

}  // namespace

std::span<const ProductKernel> product_kernels() {
  static constexpr ProductKernel kProducts[] = {
      {ConvKernelKind::im2col, im2col_conv_applies, make_im2col_conv},
      {ConvKernelKind::winograd, winograd_conv_applies, make_winograd_conv},
      {ConvKernelKind::winograd_toom_cook, winograd_toom_cook_conv_applies,
       make_winograd_toom_cook_conv},
  };
  return kProducts;
}

std::unique_ptr<OpKernel> plan_kernel(const Conv2dDesc& d, DnnlContext& ctx, const ConvPlan& plan,
                                      bool share_weights) {
  for (const ProductKernel& ours : product_kernels())
    if (plan.kernel == ours.kind) return ours.make(d, ctx, share_weights);
  auto kernel = std::make_unique<ConvKernel>(d, ctx, plan);
  if (!share_weights) kernel->keep_weights_private();
  return kernel;
}

bool same_convolution(const OpKernel& a, const OpKernel& b) {
  const auto* first = dynamic_cast<const ConvKernel*>(&a);
  const auto* second = dynamic_cast<const ConvKernel*>(&b);
  return first && second && first->same_implementation(*second);
}

std::unique_ptr<OpKernel> default_kernel(const Conv2dDesc& d, DnnlContext& ctx) {
  if (prefers_winograd(d, ctx)) {
    try {
      return std::make_unique<ConvKernel>(
          d, ctx, ConvPlan{algorithm::convolution_winograd, dt::f32, tag::any});
    } catch (const dnnl::error&) {
      // no Winograd implementation on this CPU (or none consistent with backward): direct
    }
  }
  if (prefers_blocked(d, ctx)) {
    try {
      return std::make_unique<ConvKernel>(
          d, ctx, ConvPlan{algorithm::convolution_direct, dt::f32, tag::any});
    } catch (const dnnl::error&) {
      // no direct blocked implementation consistent with backward here: NHWC
    }
  }
  return std::make_unique<ConvKernel>(
      d, ctx, ConvPlan{algorithm::convolution_direct, compute_type(d, ctx), tag::nhwc});
}

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

bool onednn_runs_avx512() {
  const auto avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & avx512) == avx512;
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

}  // namespace ic::cpu
