// What each op computes, described once with its shapes, so a backend can prepare a kernel
// (oneDNN primitive, cuDNN descriptors and algorithm) when the graph is compiled.
// All activations are NHWC, float32 or, where a desc's `activations` says so, bfloat16 (an
// inference graph in bf16 keeps the values between two such ops in bf16: graph/precision_pass.h;
// ops without the member, dense and the loss, take f32). Gradients are always float32: a
// backward that reads a bf16 activation (conv's x, batch norm's x, ReLU's y) widens it.
// Conv kernels are HWIO.
//
// For every op, OpBindings (backend.h) lists pointers in the order given here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backend/pool_windows.h"
#include "core/status.h"
#include "core/tensor.h"

namespace ic {

enum class Padding { same, valid };

// Elementwise activations (ActivationDesc, and a convolution's fused_activation):
//   relu6:   min(max(x, 0), 6)      (gradient passes where 0 < x < 6, as TensorFlow's Relu6Grad)
//   sigmoid: 1 / (1 + exp(-x))
//   swish:   x * sigmoid(x)         (Keras' swish / SiLU)
enum class Activation { relu6, sigmoid, swish };

// TensorFlow's output size and padding: SAME gives ceil(in / stride) and puts the smaller
// half of the padding before (top/left), the larger after.
struct Pads {
  int top = 0, bottom = 0, left = 0, right = 0;
};
int64_t tf_output_size(int64_t in, int kernel, int stride, Padding padding);
Pads tf_pads(int64_t in_h, int64_t in_w, int kernel_h, int kernel_w, int stride_h, int stride_w,
             Padding padding);

// How a convolution or dense layer computes in int8 (post-training quantization):
//   - x is the u8 value Quantize wrote: x_f32 ~ input_scale * x, x in [0, kInt8ActivationMax];
//   - the f32 weights (params, HWIO / [K,M]) are quantized per output channel c, once, when the
//     kernel first converts them: q = clamp(round_half_even(w / weight_scales[c]), -127, 127);
//   - the s32 sum over x * q is multiplied by input_scale * weight_scales[c] (f32), the f32
//     bias is added, then the ReLU or fused_activation post-op; y is f32.
// The integer part (the s32 sums) is exact on every CPU: activations use 7 bits so that x86's
// u8 x s8 pair instruction without VNNI (vpmaddubsw, which saturates at 16 bits) never
// saturates: 2 * 127 * 127 < 32767.
constexpr int kInt8ActivationMax = 127;
constexpr int kInt8WeightMax = 127;
//   - with output_scale (convolutions only), y is u8 instead, in the same pass: the Quantize
//     node's formula applied to that f32 value, clamp(round_half_even(y * (1 / output_scale)),
//     0, kInt8ActivationMax), so that the next int8 layers read it as they read Quantize's.
struct Int8Conv {
  float input_scale = 1.f;
  std::vector<float> weight_scales;  // one per output channel
  std::optional<float> output_scale = std::nullopt;
};

// y = conv(x, w) (+ b) (then max(y, 0) if fused_relu, or fused_activation's f(y)).
// in: x[N,H,W,Ci]  params: w[kh,kw,Ci/groups,Co] (+ b[Co])  out: y[N,Ho,Wo,Co]
// Grouped (groups > 1): the channels split into `groups` equal runs; output channels
// [g*Co/G, (g+1)*Co/G) read only input channels [g*Ci/G, (g+1)*Ci/G) (TensorFlow's grouped
// Conv2D). Depthwise is groups = Ci = Co, whose weights [kh,kw,1,C] have the same bytes as
// TensorFlow's depthwise filter [kh,kw,C,1].
// A depthwise 3x3 convolution applied to a pointwise convolution's output in the same pass
// (Conv2dDesc::fused_depthwise): TF's SAME padding, a bias, and its own activation. The
// pointwise convolution's output never reaches memory whole; on large maps it is the bulk of
// MobileNet v2's traffic.
struct FusedDepthwise {
  int stride = 1;  // 1 or 2, in both dimensions
  bool relu = false;
  std::optional<Activation> activation = std::nullopt;  // not together with relu
};

struct Conv2dDesc {
  Shape input;
  int64_t out_channels = 0;
  int64_t groups = 1;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  Padding padding = Padding::same;
  bool has_bias = false;
  bool needs_input_grad = true;    // false for a conv that reads the images
  DType compute = DType::f32;      // bf16: convert inside, accumulate in f32
  DType activations = DType::f32;  // x and y as the arena holds them (f32 or bf16)
  // false: forward only (no backward is prepared; the graph compiles every op of a graph
  // that is not a training graph so).
  bool training = true;
  // The ReLU after the convolution, in the same pass (oneDNN post-op; cuDNN + a ReLU
  // kernel). Forward only: a training conv with it is refused (its backward would need a mask).
  bool fused_relu = false;
  // Another activation after the convolution (and its bias), in the same pass: a oneDNN
  // eltwise post-op; cuDNN runs the activation kernel on the output. Forward only, like
  // fused_relu, and not together with it (graph/inference_passes.h fuses one or the other).
  std::optional<Activation> fused_activation = std::nullopt;
  // Forward only: the weights (and bias) do not change after the first forward() (an
  // inference graph's folded values), so a backend may convert them into its own format once.
  bool constant_weights = false;
  // Forward only: the backend times the implementations it has for this shape once, when the
  // op is compiled, and keeps the fastest (cudnn.benchmark). conv_timing_enabled() says
  // whether it may.
  bool time_algorithms = false;
  // int8 inference (forward only, constant weights; see Int8Conv). Unset: float32/bf16.
  std::optional<Int8Conv> int8 = std::nullopt;
  // Forward only, on a pointwise (1x1, stride 1, ungrouped) float32 convolution with constant
  // weights and a bias: a depthwise 3x3 after it in the same pass (graph/inference_passes.h's
  // fuse_depthwise_into_pointwise, where Backend::fuses_depthwise accepts it). Its weights
  // ([3,3,1,C], HWIO) and bias [C] are params[2] and params[3]; output() is its output.
  std::optional<FusedDepthwise> fused_depthwise = std::nullopt;
  Shape output() const;
  // The convolution's own output: before a fused depthwise convolution, else output().
  Shape conv_output() const;
  int64_t in_channels_per_group() const { return input.c() / groups; }
  int64_t weight_count() const {
    return int64_t{kernel_h} * kernel_w * in_channels_per_group() * out_channels;
  }
  bool depthwise() const { return groups > 1 && groups == input.c() && groups == out_channels; }
};

// The depthwise convolution `d`'s fused_depthwise runs, as a desc of its own (same compute,
// activations and forward-only flags; its input is d.conv_output()); `d` without it otherwise.
Conv2dDesc depthwise_part(const Conv2dDesc& d);

// Whether the environment lets choices be made by timing at compile time: IC_CONV_TIMING=0
// turns every one off (runs that need one fixed implementation, hence bit-identical results
// from run to run): convolution implementations and InferenceRunner's batch slices.
bool compile_timing_allowed();
// Whether `desc` asks for its implementation to be chosen by timing and the environment lets
// it. Training convolutions are never timed.
bool conv_timing_enabled(const Conv2dDesc& desc);

// Fails for post-ops a convolution cannot have: a fused ReLU or activation on a training
// convolution (their backward would need the output before them), or both at once.
Status check_conv_post_ops(const Conv2dDesc& desc);

// Batch normalisation over N,H,W per channel, then optionally ReLU (fused).
// in: x   params: beta[C] (+ gamma[C] if has_gamma)   state: moving_mean[C], moving_variance[C]
// out: y   training: batch statistics, moving = moving*decay + batch*(1-decay), with the
// batch variance unbiased (n/(n-1)) in the moving average as TensorFlow's fused batch norm.
// inference: moving statistics.
struct BatchNormDesc {
  Shape input;
  float epsilon = 1e-3f;
  float decay = 0.996f;
  bool has_gamma = false;
  bool fused_relu = false;
  bool training = true;
  DType compute = DType::f32;
  DType activations = DType::f32;  // x and y (f32 or bf16); statistics and gradients stay f32
};

// in: x  out: y = max(x, 0)
struct ReluDesc {
  Shape input;
  DType activations = DType::f32;  // x and y (f32 or bf16)
};

// in: x  out: y = f(x), elementwise, with f one of Activation (above).
struct ActivationDesc {
  Shape input;
  Activation function = Activation::relu6;
  DType activations = DType::f32;  // x and y (f32 or bf16)
};
const char* activation_name(Activation function);

// Squeeze-and-excitation's product: each channel of each example times its own factor.
// in: x[N,H,W,C], s[N,C]  out: y[N,H,W,C] = x[n,h,w,c] * s[n,c]
// backward: dx = dy * s, ds[n,c] = sum over h,w of dy * x.
struct ChannelScaleDesc {
  Shape input;
  DType activations = DType::f32;  // x, s and y (f32 or bf16)
};

// Zero padding around the map (Keras' ZeroPadding2D), for networks whose padding is not
// TensorFlow's SAME. in: x[N,H,W,C]  out: y[N,H+top+bottom,W+left+right,C]
struct PadDesc {
  Shape input;
  Pads pads;
  DType activations = DType::f32;  // x and y (f32 or bf16)
  Shape output() const;
};

// in: x  out: y. Average pooling excludes padding from the count (TensorFlow SAME).
enum class PoolKind { max, avg };
struct Pool2dDesc {
  Shape input;
  PoolKind kind = PoolKind::max;
  int kernel_h = 3, kernel_w = 3;
  int stride_h = 1, stride_w = 1;
  Padding padding = Padding::valid;
  bool training = true;  // false: forward only (max pooling then keeps no argmax)
  // x and y: f32 or bf16; or u8 (int8 inference, forward only), both at the same scale: max
  // pooling commutes with quantization, average pooling rounds its mean to the nearest level.
  DType activations = DType::f32;
  Shape output() const;
};

// `d`'s windows (pool_windows.h).
PoolWindows pool_windows(const Pool2dDesc& d);

// in: x[N,H,W,C]  out: y[N,C] (mean over H,W)
struct GlobalAvgPoolDesc {
  Shape input;
  DType activations = DType::f32;  // x and y (f32 or bf16; the mean is taken in f32)
};

// in: x0..xk (same N,H,W)  out: y, channels concatenated in order.
struct ConcatDesc {
  std::vector<Shape> inputs;
  // Every x and y: f32 or bf16; or u8 (int8 inference, forward only), all at one scale.
  DType activations = DType::f32;
  Shape output() const;
};

// in: x  out: y = x * mask / keep_prob, mask ~ Bernoulli(keep_prob) drawn from
// (StepContext::seed, element index), so CPU and GPU draw the same mask. Identity when
// not training. per_example (drop-connect, stochastic depth): one draw per example, index n,
// that keeps or drops the whole example's tensor (a residual branch), as TensorFlow's
// EfficientNet's drop_connect.
struct DropoutDesc {
  Shape input;
  float keep_prob = 0.8f;
  bool training = true;
  bool per_example = false;
  // Elements that share one draw: 1, or one example's (per_example).
  int64_t elements_per_draw() const {
    return per_example && input.rank() > 0 && input[0] > 0 ? input.numel() / input[0] : 1;
  }
  DType activations = DType::f32;  // x and y (f32 or bf16); gradients stay f32
};

// in: x[N,K]  params: w[K,M] (+ b[M])  out: y[N,M]
struct DenseDesc {
  int64_t batch = 0, in_features = 0, out_features = 0;
  bool has_bias = true;
  bool needs_input_grad = true;
  bool training = true;  // false: forward only
  std::optional<Int8Conv> int8 =
      std::nullopt;  // int8 inference (forward only): x is u8, as a convolution's
};

// in: x (f32)  out: y (u8) = clamp(round_half_even(x / scale), 0, max_level). Quantizes a
// value once for the int8 convolutions and dense layers that read it (inference only).
// With source u8 (requantize): x is u8 at source_scale and y is the same formula applied to its
// float32 value, x * source_scale: a u8 value moved to another scale without a float32 copy.
struct QuantizeDesc {
  Shape input;
  float scale = 1.f;
  int max_level = kInt8ActivationMax;
  DType source = DType::f32;
  float source_scale = 1.f;  // u8 source only
};

// in: a, b (same shape)  out: y = a + b (then ReLU if fused_relu). ResNet's shortcut.
struct AddDesc {
  Shape input;
  bool fused_relu = false;
  DType activations = DType::f32;  // a, b and y (f32 or bf16)
};

// Mean softmax cross-entropy with TensorFlow's label smoothing, times `weight`:
// target = onehot(label)*(1-s) + s/num_classes. Rows whose label is < 0 are padding: they
// add nothing and are not counted in the mean.
// in: logits[N,C] (f32), labels[N] (i32)  out: loss (scalar f32)
// backward: d logits (the loss is a root: its output gradient is taken as 1).
struct SoftmaxCrossEntropyDesc {
  int64_t batch = 0, num_classes = 0;
  float label_smoothing = 0.f;
  float weight = 1.f;
};

// Reinterprets x with another shape (same element count and order); no computation.
// in: x  out: y (aliases x)
struct ReshapeDesc {
  Shape input, output;
  DType activations = DType::f32;  // x and y (f32 or bf16)
};

// in: x (from)  out: y (to) = x converted, bf16 rounded to nearest even. Where a value enters or
// leaves a graph whose activations are bf16 (the images, the logits). backward: dx = dy (the
// gradients are f32 on both sides).
struct CastDesc {
  Shape input;
  DType from = DType::f32, to = DType::bf16;  // f32 -> bf16 or bf16 -> f32
};

using OpDesc =
    std::variant<Conv2dDesc, BatchNormDesc, ReluDesc, Pool2dDesc, GlobalAvgPoolDesc, ConcatDesc,
                 DropoutDesc, DenseDesc, AddDesc, SoftmaxCrossEntropyDesc, ReshapeDesc,
                 QuantizeDesc, CastDesc, ActivationDesc, ChannelScaleDesc, PadDesc>;

// The type the arena holds `desc`'s activations in (f32 for ops that have no choice).
DType activation_type(const OpDesc& desc);

// "conv2d", "batch_norm", ...: for logs and the summary table.
const char* op_name(const OpDesc& desc);

// Multiply-adds of one forward pass (convolutions and dense layers; others count 0).
int64_t op_multiply_adds(const OpDesc& desc);

}  // namespace ic
