// The arithmetic of the ONNX export of an int8 model (docs/formats.md "ONNX export of an int8
// model"): its quantized layers as ONNX Runtime's quantization tool writes them (QDQ),
//   x -> Clip(0, 127·s) -> QuantizeLinear(s, uint8 0) -> DequantizeLinear(s, 0) -> Conv/Gemm
//   q (int8 initializer) -> DequantizeLinear(weight_scales, int8 zeros, per output channel)
// so an ONNX runtime computes what our int8 layers compute (graph/quantize_pass.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/quantize_pass.h"

namespace ic {

// Where a weight tensor's output channel is: the outermost axis (ONNX Conv's OIHW) or the
// innermost one (Gemm's [in, out] kernel, our HWIO).
enum class ChannelAxis { outer, inner };

// max |w| / kInt8WeightMax per output channel (1 for a channel of zeros): the scales our int8
// layers take of the weights they run, the folded ones (graph/quantize_pass.h's
// per_channel_weight_scales, over either layout). The table's weight_scales describe the
// weights as stored, before folding; the folded ones quantize to the same integers.
std::vector<float> channel_weight_scales(std::span<const float> weights, int64_t channels,
                                         ChannelAxis axis);

// q = clamp(nearbyint(w / scales[c]), -kInt8WeightMax, kInt8WeightMax), c the output channel
// of each weight. For an int8 model, whose weights are already q · scale, this gives q back.
std::vector<int8_t> quantize_weights(std::span<const float> weights, std::span<const float> scales,
                                     ChannelAxis axis);

// The largest value the Clip before QuantizeLinear lets through: kInt8ActivationMax · scale.
// Our activations are 7-bit ([0, 127], ops.h says why) where QuantizeLinear's uint8 would
// saturate at 255 only.
float activation_clip_max(float input_scale);

// `layer`'s entry checked against the layer it quantizes: `channels` weight scales, every
// scale positive and finite. Errors name the layer.
Status check_layer_quantization(const std::string& layer, const LayerQuantization& q,
                                int64_t channels);

}  // namespace ic
