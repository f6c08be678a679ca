#include "backend/ops.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ic {

int64_t tf_output_size(int64_t in, int kernel, int stride, Padding padding) {
  if (padding == Padding::same) return (in + stride - 1) / stride;
  return (in - kernel + stride) / stride;  // ceil((in - kernel + 1) / stride)
}

static void tf_pad_1d(int64_t in, int kernel, int stride, Padding padding, int& before,
                      int& after) {
  before = after = 0;
  if (padding == Padding::valid) return;
  const int64_t out = tf_output_size(in, kernel, stride, padding);
  const int64_t total = std::max<int64_t>((out - 1) * stride + kernel - in, 0);
  before = static_cast<int>(total / 2);
  after = static_cast<int>(total - total / 2);
}

Pads tf_pads(int64_t in_h, int64_t in_w, int kernel_h, int kernel_w, int stride_h, int stride_w,
             Padding padding) {
  Pads p;
  tf_pad_1d(in_h, kernel_h, stride_h, padding, p.top, p.bottom);
  tf_pad_1d(in_w, kernel_w, stride_w, padding, p.left, p.right);
  return p;
}

Shape Conv2dDesc::conv_output() const {
  return Shape{input.n(), tf_output_size(input.h(), kernel_h, stride_h, padding),
               tf_output_size(input.w(), kernel_w, stride_w, padding), out_channels};
}

Shape Conv2dDesc::output() const {
  const Shape own = conv_output();
  if (!fused_depthwise) return own;
  const int stride = fused_depthwise->stride;
  return Shape{own.n(), tf_output_size(own.h(), 3, stride, Padding::same),
               tf_output_size(own.w(), 3, stride, Padding::same), own.c()};
}

Conv2dDesc depthwise_part(const Conv2dDesc& d) {
  Conv2dDesc depthwise = d;
  depthwise.fused_depthwise.reset();
  if (!d.fused_depthwise) return depthwise;
  depthwise.input = d.conv_output();
  depthwise.out_channels = depthwise.groups = d.out_channels;
  depthwise.kernel_h = depthwise.kernel_w = 3;
  depthwise.stride_h = depthwise.stride_w = d.fused_depthwise->stride;
  depthwise.padding = Padding::same;
  depthwise.fused_relu = d.fused_depthwise->relu;
  depthwise.fused_activation = d.fused_depthwise->activation;
  return depthwise;
}

Shape Pool2dDesc::output() const {
  return Shape{input.n(), tf_output_size(input.h(), kernel_h, stride_h, padding),
               tf_output_size(input.w(), kernel_w, stride_w, padding), input.c()};
}

PoolWindows pool_windows(const Pool2dDesc& d) {
  const Shape out = d.output();
  const Pads pads =
      tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, d.padding);
  PoolWindows w;
  w.out_h = out.h();
  w.out_w = out.w();
  w.kernel_h = d.kernel_h;
  w.kernel_w = d.kernel_w;
  w.stride_h = d.stride_h;
  w.stride_w = d.stride_w;
  w.top = pads.top;
  w.left = pads.left;
  return w;
}

Shape PadDesc::output() const {
  return Shape{input.n(), input.h() + pads.top + pads.bottom, input.w() + pads.left + pads.right,
               input.c()};
}

const char* activation_name(Activation function) {
  switch (function) {
    case Activation::relu6: return "relu6";
    case Activation::sigmoid: return "sigmoid";
    case Activation::swish: return "swish";
  }
  return "?";
}

Shape ConcatDesc::output() const {
  Shape out = inputs.at(0);
  int64_t channels = 0;
  for (const Shape& s : inputs) channels += s.c();
  out[3] = channels;
  return out;
}

bool compile_timing_allowed() {
  const char* env = std::getenv("IC_CONV_TIMING");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

bool conv_timing_enabled(const Conv2dDesc& desc) {
  return !desc.training && desc.time_algorithms && compile_timing_allowed();
}

Status check_conv_post_ops(const Conv2dDesc& d) {
  if (d.fused_relu && d.fused_activation)
    return error("conv2d: a fused ReLU and a fused ", activation_name(*d.fused_activation),
                 " together (one post-op activation at most)");
  if (d.fused_depthwise) {
    const FusedDepthwise& dw = *d.fused_depthwise;
    if (d.training || d.int8 || d.groups != 1 || d.kernel_h != 1 || d.kernel_w != 1 ||
        d.stride_h != 1 || d.stride_w != 1 || !d.has_bias || !d.constant_weights)
      return error(
          "conv2d: a fused depthwise convolution follows only a forward-only pointwise "
          "(1x1, stride 1, ungrouped, float) convolution with a bias and constant "
          "weights");
    if ((dw.stride != 1 && dw.stride != 2) || (dw.relu && dw.activation))
      return error("conv2d: a fused depthwise convolution of stride ", dw.stride,
                   (dw.relu && dw.activation) ? " with two activations" : "",
                   " (stride 1 or 2, one activation at most)");
    // A backend's depthwise post-op (oneDNN's) takes one padding for both dimensions.
    const Shape map = d.conv_output();
    const Pads pads = tf_pads(map.h(), map.w(), 3, 3, dw.stride, dw.stride, Padding::same);
    if (pads.top != pads.left)
      return error("conv2d: a fused depthwise convolution of stride ", dw.stride, " on ", map.h(),
                   "x", map.w(), " maps pads the top by ", pads.top, " and the left by ", pads.left,
                   " (one padding for both dimensions)");
  }
  if (d.training && (d.fused_relu || d.fused_activation))
    return error("conv2d: a fused ",
                 d.fused_activation ? activation_name(*d.fused_activation) : "ReLU",
                 " is forward only (its backward would need the convolution's output before it); "
                 "training convolutions are followed by their batch norm and activation instead");
  return Status();
}

namespace {

// A convolution's name: [kind][post-op], kind float/grouped/int8/with a fused depthwise
// convolution after it, post-op (the convolution's own) none, relu, then
// Activation's relu6, sigmoid, swish.
constexpr const char* kConvNames[4][5] = {
    {"conv2d", "conv2d+relu", "conv2d+relu6", "conv2d+sigmoid", "conv2d+swish"},
    {"grouped_conv2d", "grouped_conv2d+relu", "grouped_conv2d+relu6", "grouped_conv2d+sigmoid",
     "grouped_conv2d+swish"},
    {"conv2d_int8", "conv2d_int8+relu", "conv2d_int8+relu6", "conv2d_int8+sigmoid",
     "conv2d_int8+swish"},
    {"conv2d+depthwise", "conv2d+relu+depthwise", "conv2d+relu6+depthwise",
     "conv2d+sigmoid+depthwise", "conv2d+swish+depthwise"},
};

static_assert(static_cast<int>(Activation::relu6) == 0 &&
              static_cast<int>(Activation::sigmoid) == 1 &&
              static_cast<int>(Activation::swish) == 2);

struct OpNamer {
  const char* operator()(const Conv2dDesc& d) const {
    const int kind = d.fused_depthwise ? 3 : d.int8 ? 2 : d.groups > 1 ? 1 : 0;
    const int post = d.fused_activation ? 2 + static_cast<int>(*d.fused_activation)
                     : d.fused_relu     ? 1
                                        : 0;
    return kConvNames[kind][post];
  }
  const char* operator()(const BatchNormDesc& d) const {
    return d.fused_relu ? "batch_norm+relu" : "batch_norm";
  }
  const char* operator()(const ReluDesc&) const { return "relu"; }
  const char* operator()(const Pool2dDesc& d) const {
    return d.kind == PoolKind::max ? "max_pool" : "avg_pool";
  }
  const char* operator()(const GlobalAvgPoolDesc&) const { return "global_avg_pool"; }
  const char* operator()(const ConcatDesc&) const { return "concat"; }
  const char* operator()(const DropoutDesc& d) const {
    return d.per_example ? "drop_connect" : "dropout";
  }
  const char* operator()(const ActivationDesc& d) const { return activation_name(d.function); }
  const char* operator()(const ChannelScaleDesc&) const { return "scale_channels"; }
  const char* operator()(const PadDesc&) const { return "zero_pad"; }
  const char* operator()(const DenseDesc&) const { return "dense"; }
  const char* operator()(const AddDesc& d) const { return d.fused_relu ? "add+relu" : "add"; }
  const char* operator()(const SoftmaxCrossEntropyDesc&) const { return "softmax_cross_entropy"; }
  const char* operator()(const ReshapeDesc&) const { return "reshape"; }
  const char* operator()(const QuantizeDesc&) const { return "quantize"; }
  const char* operator()(const CastDesc& d) const {
    return d.to == DType::bf16 ? "cast_to_bf16" : "cast_to_f32";
  }
};

// Descs with an `activations` member report it; the others hold f32 (or their own types).
struct ActivationType {
  template <typename Desc>
  DType operator()(const Desc& d) const {
    if constexpr (requires { d.activations; }) {
      return d.activations;
    } else {
      return DType::f32;
    }
  }
};
}  // namespace

const char* op_name(const OpDesc& desc) { return std::visit(OpNamer{}, desc); }

DType activation_type(const OpDesc& desc) { return std::visit(ActivationType{}, desc); }

int64_t op_multiply_adds(const OpDesc& desc) {
  if (const auto* conv = std::get_if<Conv2dDesc>(&desc)) {
    const Shape own = conv->conv_output();
    const int64_t depthwise = conv->fused_depthwise ? conv->output().numel() * 9 : 0;
    return own.numel() * conv->kernel_h * conv->kernel_w * conv->in_channels_per_group() +
           depthwise;
  }
  if (const auto* dense = std::get_if<DenseDesc>(&desc)) {
    return dense->batch * dense->in_features * dense->out_features;
  }
  return 0;
}

}  // namespace ic
