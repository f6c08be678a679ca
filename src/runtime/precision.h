// The number format inference computes in, as classify's and serve's --precision name it.
//   float32: everything in f32;
//   bfloat16: where the CPU has bf16 dot products, convolutions in bf16 and, on a backend whose
//             kernels take them (Backend::supports_bf16_activations), the activations held in
//             bf16 between ops, except where a convolution timed faster in float32 on its
//             widened activations (then it and the ops around it keep float32:
//             graph/precision_pass.h); elsewhere float32 (the backend's description says so);
//   int8: the layers an int8 export names in int8 (graph/quantize_pass.h), the rest in f32.
#pragma once

#include <string>

#include "core/status.h"
#include "graph/inference_graph.h"
#include "runtime/inference_model.h"

namespace ic {

enum class InferencePrecision { float32, bfloat16, int8 };

const char* precision_name(InferencePrecision precision);  // "float32", "bfloat16", "int8"

// "N of its int8 convolutions timed faster in float32 and run in float32": how serve's start-up
// line and classify describe an int8 graph's layers that Backend::int8_conv_pays turned down.
std::string int8_layers_in_float32_note(const InferencePassStats& stats);

// `base` with what `precision` changes on `backend`. int8 needs a model loaded from an int8
// export (export_model --format=int8); without one the error says so and names the checkpoint.
Result<InferenceGraphOptions> graph_options_for(const InferenceModel& model,
                                                InferencePrecision precision, Backend& backend,
                                                InferenceGraphOptions base = {});

}  // namespace ic
