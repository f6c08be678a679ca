// A trained model as a TensorFlow SavedModel directory, what TensorFlow Serving and
// tf.saved_model.load read:
//   <dir>/saved_model.pb                          SavedModel: one TF1 MetaGraphDef, tag "serve",
//                                                 signature "serving_default" (saved_model_graph.h)
//   <dir>/variables/variables.index               every variable the graph reads, under its
//   <dir>/variables/variables.data-00000-of-00001 TF-slim name (io/tensor_bundle.h)
// The variables hold the inference weights: EMA shadows and the batch norm moving statistics,
// and the bundle's metadata entry the checkpoint's metadata and global step, which
// load_for_inference reads back to serve the export.
#pragma once

#include <string>

#include "core/status.h"
#include "runtime/inference_model.h"

namespace ic {

// Writes the SavedModel's files into `dir` (created if needed). The caller makes the result
// appear atomically (model_export.h writes into a temp directory and renames it).
Status write_saved_model(const InferenceModel& model, const std::string& dir);

}  // namespace ic
