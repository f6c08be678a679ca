// An ONNX file our export wrote (infer/onnx_export.h), read back as the model it was exported
// from, so serve and classify can load an export directory whose newest version holds only
// model.onnx. The metadata_props give the model, classes and image size; the initializers the
// values. The export folded each convolution's batch norm into it, so such a layer comes back
// as the folded weights with an identity batch norm (mean 0, variance 1 - epsilon, no gamma
// effect) whose beta is the folded bias: the inference graph folds it again to the same values
// (to a float's rounding). Lives in infer/ because only infer/ links libonnx; the runtime's
// load_for_inference reads every other format.
#pragma once

#include <string>

#include "core/status.h"
#include "runtime/inference_model.h"

namespace ic {

// Reads `path` (a model.onnx). An ONNX file without our metadata, or an int8 (QDQ) one, whose
// float values are not stored, is an error saying what can be served.
Result<InferenceModel> read_onnx_export(const std::string& path);

// load_for_inference, plus an export version holding only model.onnx: what serve and classify
// load. `checkpoint` when given, else the newest servable in `model_dir`.
Result<InferenceModel> load_servable_model(const std::string& model_dir,
                                           const std::string& checkpoint);

}  // namespace ic
