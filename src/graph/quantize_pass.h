// int8 inference (post-training quantization) on an inference graph whose batch norms are
// folded: the convolutions and dense layers a QuantizationTable names compute in int8 (ops.h's
// Int8Conv). Each value such a layer reads gets ONE Quantize node (f32 -> u8 at the value's
// calibrated scale), shared by every quantized layer that reads it; the layers write f32, so
// pooling, concatenation and the layers left in f32 see what they always saw.
//
// Which layers: a layer is quantized when the table has its node name, and where an Int8Pays
// is given, it says the convolution's int8 is worth it (Backend::int8_conv_pays: on a CPU
// without VNNI, layers whose float32 plan is Winograd time faster in float32). Calibration
// (runtime/calibration.h) leaves out the layers whose input can be negative (the first
// convolution reads the images, in [-1, 1]): activations are u8.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/inference_passes.h"

namespace ic {

struct LayerQuantization {
  // The u8 input: x ~ input_scale * q, q in [0, kInt8ActivationMax].
  float input_scale = 0.f;
  // Per output channel c of the weights as the model's checkpoint holds them (before batch
  // norm is folded in): w ~ weight_scales[c] * q, q in [-kInt8WeightMax, kInt8WeightMax]. What
  // an int8 export stores and its ONNX QDQ form uses. quantize_layers does not read them: it
  // takes per_channel_weight_scales of the folded weights, which quantize to the same integers
  // (folding multiplies each output channel by one positive factor... or a negative one: the
  // symmetric rounding is odd, so either way q is the same).
  std::vector<float> weight_scales;
};

struct QuantizationTable {
  std::map<std::string, LayerQuantization> layers;  // by node name (the layer's TF-slim scope)
  int64_t calibration_images = 0;                   // how many images set the input scales
  std::string calibration_data;                     // the files they came from
};

// Whether a convolution with its int8 fields set should run in int8 (Backend::int8_conv_pays).
using Int8Pays = std::function<Result<bool>(const Conv2dDesc&)>;

// The int8 fields of a convolution or dense node (Int8Conv, set when it is int8); nullptr for
// other ops.
std::optional<Int8Conv>* int8_fields(Node& node);

// A scale as a map key for (value, scale) pairs: its bits, so only identical scales share a
// key (a value quantized at two scales is two u8 values).
uint32_t scale_key(float scale);

// Per output channel: max |w| / kInt8WeightMax over weights whose output channel is the
// innermost axis (HWIO convolution kernels, [K,M] dense kernels); a channel of zeros gets 1.
std::vector<float> per_channel_weight_scales(const std::vector<float>& weights, int64_t channels);

// The layers of `in` named in `table` made int8 (weight scales: per_channel_weight_scales of
// their weights in `in`), with a Quantize node before each value they read; with `pays`, the
// convolutions it turns down stay float32 (stats.int8_layers_in_float32 counts them). Fails
// naming the layer when an entry does not fit (an input scale that is not positive and finite,
// a name that is not a convolution or dense layer of the graph), or when `pays` fails.
Result<InferenceGraph> quantize_layers(InferenceGraph in, const QuantizationTable& table,
                                       const Int8Pays& pays = {});

// After quantize_layers: an int8 convolution whose f32 output nothing but one Quantize node
// reads (and the caller does not) writes that node's u8 value itself, at its scale
// (Int8Conv::output_scale: the same bytes, bit for bit), and the Quantize node goes. In an
// Inception block that is every convolution inside a branch; the branches' last ones, which
// concatenation reads, still write f32. stats.int8_outputs counts them.
InferenceGraph write_int8_outputs(InferenceGraph in);

}  // namespace ic
