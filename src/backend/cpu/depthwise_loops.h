// The loops of depthwise_bf16_kernel.cc: a depthwise convolution (one filter per channel) on
// NHWC bf16 activations, multiplied and summed in float, one output row at a time. With
// AVX-512 they are written with intrinsics (GCC does not vectorize them well: the float -> bf16
// narrowing next to the exponential kept whole loops scalar), elsewhere as plain loops.
#pragma once

#include <cstdint>

namespace ic::cpu {

// The geometry of a depthwise convolution on NHWC activations.
struct DepthwiseGeometry {
  int64_t in_h = 0, in_w = 0, channels = 0, out_w = 0;
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0;  // the rest of the padding is implied by out_h, out_w
};

// What follows the bias, in the same pass. sigmoid and swish use exp_approx (below).
enum class DepthwiseActivation { none, relu, relu6, sigmoid, swish };

// e^x within 4e-5 relative for x in [-87, 88] (clamped outside; a NaN stays NaN): the
// activations' results are rounded to bf16 (8 bits) after it.
float exp_approx(float x);

// The weights (or the bias: taps = 1) [taps][channels] reordered as the loops read them: in
// each whole block of 32 channels, the 16 even channels, then the 16 odd ones; the rest as they
// are. Then one 64-byte load of 32 bf16 activations becomes two float vectors with one
// instruction each (a shift for the even channels, a mask for the odd), against two for every
// 16 channels in the order they are stored.
void pack_depthwise(const float* natural, int64_t taps, int64_t channels, float* packed);

// Output row `oh` of one image: y[ow, c] = act(bias[c] + sum over the taps inside the image of
// x[ih, iw, c] * w[kh, kw, c]) for ow in [0, out_w), rounded to bf16 to nearest even.
// x: the image's [in_h, in_w, channels] bf16 bits; w: [kernel_h, kernel_w, channels] and bias:
// [channels], both packed (pack_depthwise); y: the row's [out_w, channels] bf16 bits.
void depthwise_row_bf16(const uint16_t* x, const float* w, const float* bias,
                        const DepthwiseGeometry& g, int64_t oh, DepthwiseActivation act,
                        uint16_t* y);

}  // namespace ic::cpu
