// int8 convolution and dense layers on oneDNN (ops.h's Int8Conv): u8 activations x s8 weights,
// s32 sums, f32 output. One kernel class runs either primitive; the two factories differ only
// in the primitive they describe.
//
// The weights arrive as f32 (HWIO / [K,M], the output channel innermost in both) and are
// constant: the first forward quantizes them per output channel into an s8 copy in the same
// layout, then reorders that once into the primitive's format. Both buffers belong to the
// kernel (persistent), so forward allocates nothing and the workspace holds only oneDNN's
// scratchpad.
//
// The rescale: oneDNN 2.6 adds its own bias argument BEFORE the output scales
// (y = scale * (s32 + b)), where Int8Conv says y = s32 * scale + b. So the kernel passes the bias
// divided by the scale, b[c] / scale[c] (computed at the first forward, with the weights), and
// each output is fl(scale[c] * fl(float(s32) + fl(b[c] / scale[c]))): Int8Conv's value to within
// f32 rounding of |s32 * scale| + |b|, then the ReLU post-op. (A binary-add post-op after the
// scales would give the formula's own rounding, fl(fl(s32 * scale) + b), and did until
// 2026-12-06; on a 2-core AMX Xeon it cost Inception v3's int8 inference about 10% at batch 32,
// 188-198 against 212-220 images/sec without it: oneDNN 2.6's brgemm kernels apply binary
// post-ops in a slower epilogue than their bias.) A convolution with an output scale (u8 output)
// adds a linear post-op,
// fl(y * (1 / output_scale)) (alpha * y + 0: the product, as the Quantize kernel computes it),
// and a clip to [0, kInt8ActivationMax]; oneDNN's conversion to u8 then rounds to nearest even,
// so the u8 output equals the f32 output quantized by a Quantize node, bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

// q = clamp(round_half_even(w / scale[c]), -kInt8WeightMax, kInt8WeightMax), c = i % channels.
// A true division, not w * (1 / scale): ops.h's formula as written, and what a reference in
// any language computes from it.
void quantize_weights(const float* w, int64_t count, const std::vector<float>& scales, int8_t* q) {
  const auto channels = static_cast<int64_t>(scales.size());
  const auto top = static_cast<float>(kInt8WeightMax);
  for (int64_t i = 0; i < count; ++i) {
    const float level = std::nearbyint(w[i] / scales[static_cast<size_t>(i % channels)]);
    q[i] = static_cast<int8_t>(std::clamp(level, -top, top));
  }
}

// input_scale * weight_scales[c]: what multiplies channel c's s32 sums.
std::vector<float> output_scales(const Int8Conv& q) {
  std::vector<float> scales(q.weight_scales.size());
  for (size_t c = 0; c < scales.size(); ++c) scales[c] = q.input_scale * q.weight_scales[c];
  return scales;
}

// What a kernel needs besides its primitive: the layouts the arena holds.
struct Int8Layout {
  const char* op = "";         // "conv2d" / "dense", for messages
  memory::desc plain_weights;  // s8, the arena's weight layout (HWIO / io)
  memory::desc bias;           // the primitive's f32 bias argument, [channels]; none without
  int64_t weight_count = 0;
  bool has_bias = false;
};

class Int8Kernel final : public OpKernel {
 public:
  Int8Kernel(DnnlContext& ctx, const Int8Layout& layout, const Int8Conv& q,
             std::vector<float> output_scales, const dnnl::primitive_desc& pd,
             dnnl::primitive primitive)
      : ctx_(ctx),
        layout_(layout),
        weight_scales_(q.weight_scales),
        output_scales_(std::move(output_scales)),
        pd_(pd),
        primitive_(std::move(primitive)),
        plain_(aligned_buffer(static_cast<size_t>(layout.weight_count))) {
    if (layout_.has_bias) scaled_bias_ = aligned_buffer(sizeof(float) * output_scales_.size());
    if (pd_.weights_desc() != layout_.plain_weights)
      converted_ = aligned_buffer(pd_.weights_desc().get_size());
  }

  size_t workspace_bytes() const override { return align64(pd_.scratchpad_desc().get_size()); }
  BackwardReads backward_reads() const override { return {false, false}; }
  std::string implementation() const override { return std::string(pd_.impl_info_str()) + " int8"; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings(layout_.op, b, 1, 1, layout_.has_bias ? 2 : 1, 0));
    if (workspace_bytes() > 0 && !b.workspace)
      return error(layout_.op, ": needs ", workspace_bytes(), " bytes of workspace, got none");
    try {
      const dnnl::engine& eng = ctx_.engine;
      weights_ = static_cast<const float*>(b.params[0]);
      ready_ = false;  // other weights: quantize again at the next forward
      const memory plain(layout_.plain_weights, eng, plain_.get());
      memory weights = plain;
      convert_.reset();
      if (converted_) {
        weights = memory(pd_.weights_desc(), eng, converted_.get());
        convert_ = std::make_unique<DnnlStep>(reorder_step(plain, weights));
      }
      args_ = {{DNNL_ARG_SRC, wrap(pd_.src_desc(), ctx_, b.inputs[0])},
               {DNNL_ARG_WEIGHTS, weights},
               {DNNL_ARG_DST, memory(pd_.dst_desc(), eng, b.outputs[0])},
               {DNNL_ARG_SCRATCHPAD, memory(pd_.scratchpad_desc(), eng, b.workspace)}};
      bias_ = layout_.has_bias ? static_cast<const float*>(b.params[1]) : nullptr;
      if (bias_) args_[DNNL_ARG_BIAS] = memory(layout_.bias, eng, scaled_bias_.get());
    } catch (const dnnl::error& e) {
      return error(layout_.op, ": binding oneDNN memory: ", e.what());
    }
    return Status();
  }

  void forward(const StepContext&) override {
    if (!ready_) {
      quantize_weights(weights_, layout_.weight_count, weight_scales_,
                       static_cast<int8_t*>(plain_.get()));
      if (convert_) convert_->primitive.execute(ctx_.stream, convert_->args);
      if (bias_) {
        auto* scaled = static_cast<float*>(scaled_bias_.get());
        for (size_t c = 0; c < output_scales_.size(); ++c) scaled[c] = bias_[c] / output_scales_[c];
      }
      ready_ = true;
    }
    primitive_.execute(ctx_.stream, args_);
  }
  void backward(const StepContext&) override {}  // forward only (the factories refuse training)

 private:
  DnnlContext& ctx_;
  Int8Layout layout_;
  std::vector<float> weight_scales_;
  std::vector<float> output_scales_;  // input_scale * weight_scales[c], oneDNN's output scales
  dnnl::primitive_desc pd_;
  dnnl::primitive primitive_;
  AlignedBuffer plain_;          // s8 weights in the arena's layout
  AlignedBuffer converted_;      // s8 weights in the primitive's format, when that differs
  AlignedBuffer scaled_bias_;    // b[c] / output_scales_[c], oneDNN's bias argument
  const float* bias_ = nullptr;  // the arena's bias
  std::unique_ptr<DnnlStep> convert_;
  std::unordered_map<int, memory> args_;
  const float* weights_ = nullptr;
  bool ready_ = false;
};

// The checks both layers share: forward only, one positive finite scale per output channel.
Status check_int8(const char* op, bool training, const Int8Conv& q, int64_t channels) {
  if (training) return invalid_argument(op, ": int8 is forward only (training must be false)");
  if (!(q.input_scale > 0.f) || !std::isfinite(q.input_scale))
    return invalid_argument(op, ": int8 input scale ", q.input_scale,
                            " is not positive and finite");
  if (q.output_scale && (!(*q.output_scale > 0.f) || !std::isfinite(*q.output_scale)))
    return invalid_argument(op, ": int8 output scale ", *q.output_scale,
                            " is not positive and finite");
  if (static_cast<int64_t>(q.weight_scales.size()) != channels)
    return invalid_argument(op, ": ", q.weight_scales.size(), " int8 weight scales for ", channels,
                            " output channels");
  for (float s : q.weight_scales)
    if (!(s > 0.f) || !std::isfinite(s))
      return invalid_argument(op, ": int8 weight scale ", s, " is not positive and finite");
  return Status();
}

// Output scales input_scale * weight_scales[c] (f32, as Int8Conv says; the bias argument is
// divided by them), then the fused ReLU or activation; a user-managed scratchpad.
dnnl::primitive_attr int8_attributes(const Int8Conv& q, const std::vector<float>& output_scales,
                                     bool relu, std::optional<Activation> activation) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_output_scales(1 << 1, output_scales);  // per channel (dimension 1: C / M)
  dnnl::post_ops post;
  append_fused_activation(post, relu, activation);
  if (q.output_scale) {
    post.append_eltwise(1.f, algorithm::eltwise_linear, 1.f / *q.output_scale, 0.f);
    post.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, static_cast<float>(kInt8ActivationMax));
  }
  attr.set_post_ops(post);
  return attr;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> make_int8_conv2d(const Conv2dDesc& d, DnnlContext& ctx) {
  IC_RETURN_IF_ERROR(check_int8("conv2d", d.training, *d.int8, d.out_channels));
  const memory::desc plain = conv_weights_md(d, dt::s8, d.groups > 1 ? tag::hwigo : tag::hwio);
  const memory::dims wdims = plain.dims();
  Int8Layout layout;
  layout.op = "conv2d";
  layout.plain_weights = plain;
  if (d.has_bias) layout.bias = memory::desc({d.out_channels}, dt::f32, tag::x);
  layout.weight_count = d.weight_count();
  layout.has_bias = d.has_bias;
  const Pads pads =
      tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, d.padding);
  const std::vector<float> scales = output_scales(*d.int8);
  try {
    const dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(
            prop_kind::forward_inference, algorithm::convolution_direct, nhwc_md(d.input, dt::u8),
            memory::desc(wdims, dt::s8, tag::any), layout.bias,
            nhwc_md(d.output(), d.int8->output_scale ? dt::u8 : dt::f32), {d.stride_h, d.stride_w},
            {pads.top, pads.left}, {pads.bottom, pads.right}),
        int8_attributes(*d.int8, scales, d.fused_relu, d.fused_activation), ctx.engine);
    return std::unique_ptr<OpKernel>(std::make_unique<Int8Kernel>(ctx, layout, *d.int8, scales, pd,
                                                                  dnnl::convolution_forward(pd)));
  } catch (const dnnl::error& e) {
    return error("conv2d: oneDNN has no int8 implementation for input ", d.input.str(), ", ",
                 d.out_channels, " filters, kernel ", d.kernel_h, "x", d.kernel_w, ": ", e.what());
  }
}

Result<std::unique_ptr<OpKernel>> make_int8_dense(const DenseDesc& d, DnnlContext& ctx) {
  IC_RETURN_IF_ERROR(check_int8("dense", d.training, *d.int8, d.out_features));
  if (d.int8->output_scale)
    return invalid_argument("dense: an int8 output scale (u8 output) is for convolutions only");
  // oneDNN's weights are {M,K}; "io" stores them as [K,M], the arena's layout.
  const memory::dims wdims{d.out_features, d.in_features};
  Int8Layout layout;
  layout.op = "dense";
  layout.plain_weights = memory::desc(wdims, dt::s8, tag::io);
  if (d.has_bias) layout.bias = memory::desc({d.out_features}, dt::f32, tag::x);
  layout.weight_count = d.in_features * d.out_features;
  layout.has_bias = d.has_bias;
  const std::vector<float> scales = output_scales(*d.int8);
  try {
    const dnnl::inner_product_forward::primitive_desc pd(
        dnnl::inner_product_forward::desc(
            prop_kind::forward_inference, memory::desc({d.batch, d.in_features}, dt::u8, tag::nc),
            memory::desc(wdims, dt::s8, tag::any), layout.bias,
            memory::desc({d.batch, d.out_features}, dt::f32, tag::nc)),
        int8_attributes(*d.int8, scales, false, std::nullopt), ctx.engine);
    return std::unique_ptr<OpKernel>(std::make_unique<Int8Kernel>(ctx, layout, *d.int8, scales, pd,
                                                                  dnnl::inner_product_forward(pd)));
  } catch (const dnnl::error& e) {
    return error("dense: oneDNN has no int8 implementation for ", d.batch, "x", d.in_features,
                 " -> ", d.out_features, ": ", e.what());
  }
}

}  // namespace ic::cpu
