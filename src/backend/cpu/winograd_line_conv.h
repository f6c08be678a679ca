// A forward-only 1xr or rx1 stride-1 convolution (Inception's 1x7, 7x1, 1x3 and 3x1) by the
// one-dimensional Winograd F(m, r): each run of m output pixels along the kernel's axis (a tile)
// comes from the n = m + r - 1 input pixels under it as
//   y_tile = A^T [ sum_ci (B^T x_tile) .* (G w) ]
// so the multiply-adds become n matrix products [tiles, Ci] x [Ci, Co] (winograd_products.h):
// F(2,7) does 7-tap kernels with 8 products for 2 outputs, 1.75x fewer multiply-adds than the
// direct convolution; F(4,3) does 3-tap ones with 6 for 4, 2x fewer.
//
// Why: at batch 1 on a 2-core AVX2 CPU (AMD EPYC Zen 2), Inception v3's 1x7 and 7x1 layers took
// 30% of the network's time at 148 GFLOP/s, near the cores' FMA peak: only fewer multiplies
// could make them faster.
//
// A, B and G come from Toom-Cook interpolation at the points 0, +-1, +-2, (+-1/2) and infinity,
// computed in double when the kernel is made; each row of B^T is scaled to entries of at most
// 1 in magnitude and the scale moved into G, which is applied to the weights once, in double.
// One more plan that conv_choice.cc's timing tries.
#pragma once

#include <memory>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

// Whether make_winograd_line_conv takes `d`: forward only, not int8, one group, float32
// activations, constant weights, a 1x3, 3x1, 1x7 or 7x1 kernel at stride 1, no activation but a
// fused ReLU, and one image's transformed tiles within 64 MiB.
bool winograd_line_conv_applies(const Conv2dDesc& d);

// The kernel for `d` (winograd_line_conv_applies). share_weights: false for a kernel timed on
// scratch buffers. Throws dnnl::error where oneDNN has no such matmul here.
std::unique_ptr<OpKernel> make_winograd_line_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                                  bool share_weights = true);

}  // namespace ic::cpu
