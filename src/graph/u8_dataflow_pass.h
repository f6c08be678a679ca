// int8 inference, after quantize_layers: pools and concatenations between int8 layers move u8
// instead of float32, so the value an Inception block's branches read is written once, in u8,
// by the layers that make it, and no Quantize node rereads four bytes per element to make it.
//
// What changes (graph/quantize_pass.h put a Quantize node before every value an int8 layer
// reads; the caller's values, the images and logits, are never touched):
//   - a concatenation whose every reader is a Quantize node of one scale s, or a pool this pass
//     makes u8, concatenates u8 at s; its Quantize node goes. Each input is brought to s: a
//     float32 input by a Quantize node (write_int8_outputs then lets an int8 convolution that
//     makes it write that u8 itself), a u8 input at another scale by a requantize;
//   - a max or average pool whose readers are all Quantize nodes, or (max only) concatenations
//     made u8, pools u8 at its input's scale, reading the u8 form of its input (its Quantize
//     node, or a new one at its readers' scale for a max pool whose input has none). The int8
//     layers after it read that u8 value at that scale. Max pooling commutes with quantizing,
//     and a max pool's largest output is its input's, so for max pools the bytes are those the
//     float32 pool and its Quantize node made; an average pool rounds its mean to the nearest
//     level at its input's (coarser) scale instead of quantizing the float32 mean.
// stats.u8_pools and stats.u8_concats count them.
#pragma once

#include "graph/inference_passes.h"

namespace ic {

InferenceGraph pools_and_concats_in_u8(InferenceGraph in);

}  // namespace ic
