// Forward-only stride-1 convolutions by Winograd's minimal filtering with transforms built by
// Toom-Cook interpolation when the kernel is made:
//   - 1x7 and 7x1 by the one-dimensional F(2,7): each run of 2 outputs along the kernel's axis
//     from the 8 input pixels under it, 8 products for 14 multiply-adds (1.75x fewer);
//   - 1x3 and 3x1 by F(4,3): 6 products for 12 (2x fewer);
//   - 3x3 by F(4x4,3x3), F(4,3) along both axes: 36 products for 144 (4x fewer), where
//     winograd_conv.h's F(2x2,3x3) does 16 for 36.
// A tile's transforms are separable, y = A_h^T [ sum_ci (B_h^T x B_w) .* (G_h w G_w^T) ] A_w,
// and the products are winograd_kernel.h's batched matmul.
//
// Why: at batch 1 on a 2-core AVX2 CPU (AMD EPYC Zen 2), Inception v3's 1x7 and 7x1 layers took
// 30% of the network's time at 148 GFLOP/s, near the cores' FMA peak: only fewer multiplies
// could make them faster.
//
// The points are 0, +-1, +-2, (+-1/2) and infinity; A, B and G are computed in double, each row of
// B^T scaled to entries of at most 1 in magnitude and the scale moved into G, which is applied to
// the weights once, in double. Rounding grows with the points (about 2e-6 of the largest output
// for F(2,7) over 160 channels, against 4e-7 for the direct convolution). One more plan that
// conv_choice.cc's timing tries.
#pragma once

#include <memory>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

// Whether make_winograd_toom_cook_conv takes `d`: forward only, not int8, one group, float32
// activations, constant weights, a 1x7, 7x1, 1x3, 3x1 or 3x3 kernel at stride 1, no activation
// but a fused ReLU, one image's transformed tiles within 64 MiB, and for 3x3 at least 64 tiles
// an image (maps of 29x29 and more).
bool winograd_toom_cook_conv_applies(const Conv2dDesc& d);

// The kernel for `d` (winograd_toom_cook_conv_applies). share_weights: false for a kernel timed
// on scratch buffers. Throws dnnl::error where oneDNN has no such matmul here.
std::unique_ptr<OpKernel> make_winograd_toom_cook_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                                       bool share_weights = true);

}  // namespace ic::cpu
