// A forward-only 3x3 stride-1 convolution by Winograd's F(2x2, 3x3): each 2x2 block of output
// pixels (a tile) comes from the 4x4 block of input around it as
//   y_tile = A^T [ sum_ci (B^T x_tile B) .* (G w G^T) ] A
// so the multiply-adds become 16 matrix products [tiles, Ci] x [Ci, Co], one per position of
// the 4x4 transformed tile, with 2.25x fewer multiply-adds than the direct convolution. The
// input transform (B^T x B: additions only), oneDNN's batched matmul, then the output
// transform (A^T m A: additions), the bias and the fused ReLU. The weights' transform
// (G w G^T) is computed once (constant weights only) and shared like any converted weights.
//
// Why: oneDNN 2.6 has no Winograd without AVX-512, and on an AVX2 CPU its direct kernels run
// Inception v3's 3x3 stride-1 layers at batch 1 below what the products reach (2-core AMD EPYC
// Zen 2: 35x35 96->96 1.04 ms direct against 0.67 ms so; 73x73 80->192 6.96 against 4.15).
// F(2x2, 3x3)'s transforms have entries 0, +-1 and +-1/2, so it rounds about as the direct
// convolution does (largest difference 1.1e-5 on outputs up to 4.4 in that test). One more
// plan that conv_choice.cc's timing tries, one image at a time as im2col_conv.h's product.
#pragma once

#include <memory>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

// Whether make_winograd_conv takes `d`: forward only, not int8, one group, float32 activations,
// constant weights, a 3x3 kernel at stride 1, no activation but a fused ReLU, and one image's
// transformed tiles within 64 MiB.
bool winograd_conv_applies(const Conv2dDesc& d);

// The kernel for `d` (winograd_conv_applies). share_weights: false for a kernel timed on scratch
// buffers. Throws dnnl::error where oneDNN has no such matmul here.
std::unique_ptr<OpKernel> make_winograd_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                             bool share_weights = true);

}  // namespace ic::cpu
