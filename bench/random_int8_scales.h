// int8 scales for TIMING ONLY: inception_bench has no trained model and no calibration images,
// so it makes a QuantizationTable on the spot from what it has, its random weights and its
// random images. The figures it gives are speed; an accuracy measured with these scales would
// mean nothing (runtime/calibration.h calibrates on real images for that).
//
// Which layers: every convolution and dense layer whose input cannot be negative (it comes
// from a ReLU, through pooling, concatenation, dropout or reshapes), the rule calibration
// follows: activations are u8, so the first convolution (it reads the images) stays f32.
// Weight scales: graph/quantize_pass.h's per_channel_weight_scales of the folded weights.
// Input scales: max |x| / kInt8ActivationMax of each such layer's input over one forward of
// `images`, read through a probe graph (below).
#pragma once

#include "backend/backend.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph/inference_graph.h"
#include "graph/quantize_pass.h"

namespace ic {

// `graph` is a model's inference graph (training = false) for images.size() / (H*W*3) images;
// `source` its parameter values; `images` NHWC f32 for that batch.
Result<QuantizationTable> random_data_int8_scales(const Graph& graph, const ParamSource& source,
                                                  Backend& backend,
                                                  const std::vector<float>& images);

}  // namespace ic
