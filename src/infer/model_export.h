// Exports of a trained model, each into a fresh numbered directory as the reference's
// Estimator export and TensorFlow Serving's model_base_path expect:
//   <export_dir>/<unix seconds>/            the export (a later second if that one is taken)
// The files are written into <export_dir>/temp-<seconds>/ first and the directory is renamed
// into place at the end, so a reader (a TF Serving that polls export_dir) never sees half an
// export; a failed export leaves no numbered directory.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/inference_model.h"

namespace ic {

enum class ExportFormat {
  saved_model,  // saved_model.pb + variables/ (saved_model_export.h)
  onnx,         // model.onnx (onnx_export.h)
  safetensors,  // model.safetensors: the inference weights and the checkpoint metadata
  // model.safetensors with the int8 layers' weights as int8 and their scales (docs/int8.md),
  // and model.onnx, the same quantized model in ONNX's QDQ form. Needs model.int8.
  int8,
};

// Writes `model` as `format` into a new numbered directory under `export_dir` (created if
// needed) and returns that directory's path. With `warmup_images` (image files), the version
// also holds TF Serving's warm-up requests, one per image (infer/warmup_export.h), written
// before the model's files so that a poller never sees a version without them.
// `extra_files` (paths inside the version → contents) are written before the model's files
// too (--export_best's record).
Result<std::string> export_trained_model(
    const InferenceModel& model, const std::string& export_dir, ExportFormat format,
    const std::vector<std::string>& warmup_images = {},
    const std::map<std::string, std::string>& extra_files = {});

// The trainers' exports (train/best_export.h's CheckpointExporter): `checkpoint` of model_dir
// as a SavedModel under export_dir, with `extra_files`.
Result<std::string> export_checkpoint_saved_model(
    const std::string& model_dir, const std::string& checkpoint, const std::string& export_dir,
    const std::map<std::string, std::string>& extra_files);

// Deletes the export in `dir` so that a poller never sees half of it: locally it is first
// renamed to a temp-N name (which pollers skip); in an object store its marker file (what
// makes a poller take it) goes first, then the rest.
Status remove_export(const std::string& dir);

// What the trainers' --export_dir does after a run (train/run_main.h): the newest checkpoint
// of `model_dir` as a SavedModel under `export_dir`. No checkpoint is an error naming
// model_dir.
Result<std::string> export_newest_saved_model(const std::string& model_dir,
                                              const std::string& export_dir);

// The safetensors export: every tensor of model.weights (EMA shadows under the parameters'
// own names), the int64 scalar global_step, and the checkpoint metadata plus "source" (the
// checkpoint read) as __metadata__. classify --checkpoint reads it like a checkpoint.
Status write_safetensors_export(const InferenceModel& model, const std::string& path);

// The int8 export's model.safetensors: as write_safetensors_export, but for every layer L of
// model.int8 the tensor "L/weights" is int8, q = clamp(round_half_even(w / s[c]), -127, 127),
// with "L/int8_weight_scales" (f32 [channels]: s) and "L/int8_input_scale" (f32 [1]) beside
// it, and the metadata says "precision": "int8" plus where the calibration images came from.
Status write_int8_export(const InferenceModel& model, const std::string& path);

}  // namespace ic
