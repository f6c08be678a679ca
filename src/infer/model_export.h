// Exports of a trained model, each into a fresh numbered directory as the reference's
// Estimator export and TensorFlow Serving's model_base_path expect:
//   <export_dir>/<unix seconds>/            the export (a later second if that one is taken)
// The files are written into <export_dir>/temp-<seconds>/ first and the directory is renamed
// into place at the end, so a reader (a TF Serving that polls export_dir) never sees half an
// export; a failed export leaves no numbered directory.
#pragma once

#include <string>

#include "core/status.h"
#include "runtime/inference_model.h"

namespace ic {

enum class ExportFormat {
  saved_model,  // saved_model.pb + variables/ (saved_model_export.h)
  onnx,         // model.onnx (onnx_export.h)
  safetensors,  // model.safetensors: the inference weights and the checkpoint metadata
};

// Writes `model` as `format` into a new numbered directory under `export_dir` (created if
// needed) and returns that directory's path.
Result<std::string> export_trained_model(const InferenceModel& model, const std::string& export_dir,
                                         ExportFormat format);

// What the trainers' --export_dir does after a run (train/run_main.h): the newest checkpoint
// of `model_dir` as a SavedModel under `export_dir`. No checkpoint is an error naming
// model_dir.
Result<std::string> export_newest_saved_model(const std::string& model_dir,
                                              const std::string& export_dir);

// The safetensors export: every tensor of model.weights (EMA shadows under the parameters'
// own names), the int64 scalar global_step, and the checkpoint metadata plus "source" (the
// checkpoint read) as __metadata__. classify --checkpoint reads it like a checkpoint.
Status write_safetensors_export(const InferenceModel& model, const std::string& path);

}  // namespace ic
