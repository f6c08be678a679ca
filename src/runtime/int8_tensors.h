// The int8 export's tensors as a reader meets them (docs/int8.md): beside each int8 layer L's
// I8 weights "L/weights", "L/int8_weight_scales" (f32 [channels]) and "L/int8_input_scale"
// (f32 [1]); the metadata's "calibration_images" and "calibration_data". Apart from
// load_for_inference so that the fuzz harness can run it on its own.
#pragma once

#include <string>

#include "core/status.h"
#include "graph/quantize_pass.h"
#include "io/checkpoint_contents.h"

namespace ic {

std::string int8_weight_scales_name(const std::string& layer);
std::string int8_input_scale_name(const std::string& layer);

// The int8 layers of `file` (read from `path`): their scales into `table`, their int8 weights
// replaced in `file` by the f32 values q * scale, so the rest of the loader reads a float32
// model. A scale that is not positive and finite, a missing or misshapen tensor, or a file
// without int8 layers is data loss naming the file and the tensor.
Status read_int8_layers(CheckpointContents& file, const std::string& path,
                        QuantizationTable& table);

}  // namespace ic
