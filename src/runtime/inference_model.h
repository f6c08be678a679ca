// A trained model as the programs after training see it (classify, export, serve): which
// checkpoint, its metadata, the options of its inference network, and the value of every
// parameter and batch-norm statistic under its TF-slim name. The exporters walk
// build_inference_graph()'s nodes with these values; the server compiles that graph.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph/quantize_pass.h"
#include "io/checkpoint_contents.h"
#include "io/export_versions.h"
#include "models/model.h"
#include "runtime/checkpoint_meta.h"
#include "runtime/int8_tensors.h"
#include "runtime/model_variables.h"

namespace ic {

struct InferenceModel {
  std::string checkpoint;  // the file or bundle prefix that was read
  int64_t global_step = 0;
  CheckpointMeta meta;
  // Inference: batch norm on moving statistics, no dropout, no loss; the auxiliary head is
  // kept (its tensors are in every Inception checkpoint) but nothing reads it.
  ModelOptions options;
  // Every parameter and state tensor of the network, f32, shapes as the graph's ParamInfo.
  // Each is its ExponentialMovingAverage shadow when the checkpoint has one (the values
  // evaluation uses; the trainer keeps shadows of the batch-norm moving statistics too), else
  // the raw tensor.
  std::map<std::string, TensorEntry> weights;
  // Set for an int8 export (docs/int8.md): its layers' scales. `weights` then holds the
  // int8 layers' weights dequantized (q * scale, f32), so every other path reads the export as
  // a float32 model of those values.
  std::optional<QuantizationTable> int8;
};

// The metadata key under which an export that holds no global_step tensor (a SavedModel's
// variables/) records the step of the checkpoint it was exported from.
inline constexpr char kExportGlobalStepKey[] = "global_step";

// The newest servable in `dir`, the one rule resolve_checkpoint and serve's watcher share:
//  - a training directory (it has a `checkpoint` file): the checkpoint that file names;
//  - else an export base directory as TF Serving reads one: of the highest numeric
//    <version> that holds one, DIR/<version>/model.safetensors (`export_model
//    --format=safetensors` or int8), else DIR/<version>/saved_model.pb with its
//    variables/variables.index (`--format=saved_model`), else DIR/<version>/model.onnx
//    (`--format=onnx`; infer/onnx_import.h reads it, as this layer does not link libonnx);
//  - else nullopt. Works through the file-system seam (local paths and gs://).
Result<std::optional<std::string>> newest_servable(const std::string& dir);
// Every servable version in `dir` by number, with newest_servable's rules: for a training
// directory its newest checkpoint only (version: the step in its name); for an export base
// directory each numeric <version> holding a servable. Empty when there is none.
Result<std::map<int64_t, std::string>> servable_versions(const std::string& dir);
// The export version of a servable path: N for <base>/<N>/model.safetensors, saved_model.pb or
// model.onnx (N all digits), else nullopt (a checkpoint, whose version is its global step).
std::optional<int64_t> export_version_of(const std::string& path);

// `checkpoint` when given (a bundle prefix model.ckpt-N, its .index, a .safetensors file, or an
// export's saved_model.pb),
// else newest_servable(model_dir). Errors name the directory or file.
Result<std::string> resolve_checkpoint(const std::string& model_dir, const std::string& checkpoint);

// Reads, checks (metadata ranges, finite values, every tensor the network needs with its
// shape) and returns the model. The file's own errors name the file. A SavedModel is read from
// its variables/ bundle, which export_model writes with the checkpoint's metadata; it holds no
// auxiliary head, so its model is built without one (the logits are the same). A SavedModel
// without that metadata (one TensorFlow wrote) is an error saying what can be loaded.
Result<InferenceModel> load_for_inference(const std::string& model_dir,
                                          const std::string& checkpoint);

// The options of the inference network a checkpoint with `meta` was trained as.
Result<ModelOptions> inference_model_options(const CheckpointMeta& meta, int64_t batch_size);

// The inference graph of `model` for `batch_size` images.
Result<Graph> build_inference_graph(const InferenceModel& model, int64_t batch_size);

// The model's values on `backend`, in the eval arenas of the layout of `graph` (an inference
// graph of `model`, any batch size): what an Evaluator over that graph reads.
Result<std::unique_ptr<ModelVariables>> upload_for_inference(Backend& backend,
                                                             const InferenceModel& model,
                                                             const Graph& graph);

}  // namespace ic
