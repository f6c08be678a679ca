// A forward-only convolution as one matrix product (im2col). On NHWC activations with HWIO
// weights, a convolution is
//   y[pixels, Co] = columns[pixels, kh*kw*Ci] x w[kh*kw*Ci, Co]
// where row p of `columns` holds output pixel p's receptive field, tap by tap (zeros where it
// reaches into the padding), in the order of the weights' rows. The weights are that matrix as
// the arena holds them, and a pointwise (1x1, stride 1) convolution's input is already its
// columns, so only the other convolutions copy anything. oneDNN's matmul multiplies, with the
// bias and the fused activation as its post-ops.
//
// Why: on an AVX2 CPU, oneDNN 2.6's direct convolution kernel runs some of Inception v3's
// shapes at batch 1 well below the FMA peak its GEMM reaches on the same multiply-adds (2-core
// AMD EPYC Zen 2: 1x3 and 3x1 on 8x8 maps at 106-120 GFLOP/s against 188 for the copy and the
// product; 3x3 stride 2 at 124-158 against 180-190), while it beats the product on large maps.
// So this is one more plan that conv_kernel.cc's timing tries, never a fixed rule.
//
// One image at a time, one product each, so a large batch needs no matrix of hundreds of
// megabytes and each image is summed alike wherever it is in the batch (im2col_conv.cc).
#pragma once

#include <cstddef>
#include <memory>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

// The most bytes of one image's columns (a larger one is left to oneDNN's convolutions).
constexpr size_t kColumnBytes = size_t{8} << 20;

// Whether make_im2col_conv takes `d`: forward only, not int8, one group, float32 activations,
// and one image's columns within kColumnBytes. It computes in float32 whatever `d.compute` asks
// (as conv_kernel.cc's float32 plans of a bf16 convolution do).
bool im2col_conv_applies(const Conv2dDesc& d);

// The kernel for `d` (im2col_conv_applies). share_weights: false for a kernel timed on scratch
// buffers (converted_weights). Throws dnnl::error where oneDNN has no such matmul here.
std::unique_ptr<OpKernel> make_im2col_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                           bool share_weights = true);

}  // namespace ic::cpu
