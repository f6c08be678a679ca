#include "runtime/inference_model.h"

#include <algorithm>

#include "io/checkpoint_dir.h"
#include "io/file_system.h"
#include "io/tensor_bundle.h"
#include "runtime/checkpoint_checks.h"
#include "runtime/int8_tensors.h"

namespace ic {

namespace {

constexpr const char* kExportFile = "model.safetensors";
constexpr const char* kSavedModelFile = "saved_model.pb";
constexpr const char* kOnnxFile = "model.onnx";
// What resolve_checkpoint's and the SavedModel reader's errors say can be served.
constexpr const char* kServable =
    "a training model_dir's checkpoints, or export_model's exports (<N>/model.safetensors, "
    "<N>/saved_model.pb with its variables/, <N>/model.onnx)";

// The bundle of a SavedModel's variables, next to its saved_model.pb.
std::string saved_model_variables(const std::string& saved_model_pb) {
  return join_path(join_path(parent_path(saved_model_pb), "variables"), "variables");
}

// The variables of a SavedModel export_model wrote: its metadata says which model they are
// (a SavedModel is otherwise a TensorFlow graph, which this does not interpret).
Result<CheckpointContents> read_saved_model_variables(const std::string& saved_model_pb) {
  const std::string prefix = saved_model_variables(saved_model_pb);
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(prefix));
  IC_ASSIGN_OR_RETURN(bool has_variables, fs->exists(bundle_index_path(prefix)));
  if (!has_variables) {
    return not_found(saved_model_pb, ": a SavedModel without ", bundle_index_path(prefix),
                     "; serve loads ", kServable);
  }
  IC_ASSIGN_OR_RETURN(CheckpointContents file, read_tensor_bundle(prefix));
  if (file.metadata.empty()) {
    return invalid_argument(
        saved_model_pb,
        ": a SavedModel that export_model did not write (its variables carry no inception.cpp "
        "metadata: model, classes, image size); serve loads ",
        kServable);
  }
  return file;
}

Result<int64_t> exported_global_step(const CheckpointContents& file, const std::string& path) {
  auto found = file.metadata.find(kExportGlobalStepKey);
  if (found == file.metadata.end()) return data_loss(path, ": metadata has no global_step");
  const std::string& text = found->second;
  if (text.empty() || text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return data_loss(path, ": metadata global_step \"", text, "\" is not a step");
  return std::stoll(text);
}

}  // namespace

std::optional<int64_t> export_version_of(const std::string& path) {
  const std::string file = base_name(path);
  if (file != kExportFile && file != kSavedModelFile && file != kOnnxFile) return std::nullopt;
  return export_version_number(base_name(parent_path(path)));
}

namespace {

// The servable a version directory holds: model.safetensors, else saved_model.pb with its
// variables/ (written after variables/, but a copy made by hand may lack them), else
// model.onnx; nullopt when none.
Result<std::optional<std::string>> servable_in(FileSystem& fs, const std::string& version_dir) {
  const std::string safetensors = join_path(version_dir, kExportFile);
  IC_ASSIGN_OR_RETURN(bool found, fs.exists(safetensors));
  if (found) return std::optional<std::string>(safetensors);
  const std::string saved_model = join_path(version_dir, kSavedModelFile);
  IC_ASSIGN_OR_RETURN(found, fs.exists(saved_model));
  if (found) {
    IC_ASSIGN_OR_RETURN(found, fs.exists(bundle_index_path(saved_model_variables(saved_model))));
    if (found) return std::optional<std::string>(saved_model);
  }
  const std::string onnx = join_path(version_dir, kOnnxFile);
  IC_ASSIGN_OR_RETURN(found, fs.exists(onnx));
  if (found) return std::optional<std::string>(onnx);
  return std::optional<std::string>();
}

}  // namespace

Result<std::optional<std::string>> newest_servable(const std::string& dir) {
  IC_ASSIGN_OR_RETURN(std::optional<std::string> latest, latest_checkpoint(dir));
  if (latest) return latest;
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(dir));
  IC_ASSIGN_OR_RETURN(auto versions, export_version_dirs(dir));
  for (const auto& [number, version_dir] : versions) {
    IC_ASSIGN_OR_RETURN(std::optional<std::string> servable, servable_in(*fs, version_dir));
    if (servable) return servable;
  }
  return std::optional<std::string>();
}

Result<std::map<int64_t, std::string>> servable_versions(const std::string& dir) {
  std::map<int64_t, std::string> found;
  IC_ASSIGN_OR_RETURN(std::optional<std::string> latest, latest_checkpoint(dir));
  if (latest) {
    // A training directory: its newest checkpoint only (older ones are pruned by the trainer
    // while they might be loading).
    found.emplace(checkpoint_step(*latest).value_or(0), *latest);
    return found;
  }
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(dir));
  IC_ASSIGN_OR_RETURN(auto versions, export_version_dirs(dir));
  for (const auto& [number, version_dir] : versions) {
    IC_ASSIGN_OR_RETURN(std::optional<std::string> servable, servable_in(*fs, version_dir));
    if (servable) found.emplace(number, *servable);
  }
  return found;
}

Result<std::string> resolve_checkpoint(const std::string& model_dir,
                                       const std::string& checkpoint) {
  if (!checkpoint.empty()) return checkpoint;
  if (model_dir.empty()) return invalid_argument("give --model_dir or --checkpoint");
  IC_ASSIGN_OR_RETURN(std::optional<std::string> latest, newest_servable(model_dir));
  if (!latest) {
    return not_found("no checkpoint in ", model_dir, " (it serves ", kServable, ")");
  }
  return *latest;
}

Result<ModelOptions> inference_model_options(const CheckpointMeta& meta, int64_t batch_size) {
  IC_ASSIGN_OR_RETURN(ModelOptions m, default_model_options(meta.model));
  m.batch_size = batch_size;
  m.height = meta.height;
  m.width = meta.width;
  m.num_classes = meta.num_classes;
  m.depth_multiplier = static_cast<float>(meta.depth_multiplier);
  m.training = false;
  m.aux_logits = true;  // the checkpoint has the aux head; its tensors must load
  m.build_losses = false;
  return m;
}

Result<Graph> build_inference_graph(const InferenceModel& model, int64_t batch_size) {
  ModelOptions options = model.options;
  options.batch_size = batch_size;
  return build_model(options);
}

Result<InferenceModel> load_for_inference(const std::string& model_dir,
                                          const std::string& checkpoint) {
  InferenceModel model;
  IC_ASSIGN_OR_RETURN(model.checkpoint, resolve_checkpoint(model_dir, checkpoint));
  const std::string& path = model.checkpoint;
  if (base_name(path) == kOnnxFile) {
    // Only infer/ links libonnx: its load_servable_model reads these.
    return invalid_argument(path,
                            ": an ONNX export, which serve and classify load; this "
                            "program reads checkpoints, model.safetensors and saved_model.pb");
  }
  const bool saved_model = base_name(path) == kSavedModelFile;
  IC_ASSIGN_OR_RETURN(CheckpointContents file,
                      saved_model ? read_saved_model_variables(path) : read_checkpoint(path));
  IC_ASSIGN_OR_RETURN(model.meta, checked_checkpoint_meta(file, path));
  auto precision = file.metadata.find("precision");
  if (precision != file.metadata.end()) {
    if (precision->second != "int8")
      return data_loss(path, ": precision \"", precision->second,
                       "\" is not one this reads (int8)");
    QuantizationTable table;
    IC_RETURN_IF_ERROR(read_int8_layers(file, path, table));
    model.int8 = std::move(table);
  }
  IC_ASSIGN_OR_RETURN(model.options, inference_model_options(model.meta, 1));
  // The SavedModel exports only what the logits need: no auxiliary head to load. Neither has an
  // export made from a SavedModel's model (sweep --export_format: safetensors or int8 of its
  // winner), so the head is built only when the file has its tensors.
  model.options.aux_logits =
      !saved_model &&
      std::any_of(file.tensors.begin(), file.tensors.end(), [](const TensorEntry& t) {
        return t.name.find("/AuxLogits/") != std::string::npos;
      });
  IC_ASSIGN_OR_RETURN(Graph graph, build_model(model.options));

  if (saved_model) {
    IC_ASSIGN_OR_RETURN(model.global_step, exported_global_step(file, path));
  } else {
    IC_ASSIGN_OR_RETURN(model.global_step, read_global_step(file, path));
  }

  for (const ParamInfo& param : graph.params) {
    // The shadow wherever there is one, as evaluation (ModelVariables::restore_for_eval) and the
    // reference's ema.variables_to_restore() do: the batch-norm moving statistics have
    // shadows too.
    const TensorEntry* entry = file.find(param.name + "/ExponentialMovingAverage");
    if (entry == nullptr) entry = file.find(param.name);
    if (entry == nullptr) {
      return error(path, ": checkpoint has no tensor ", param.name, " that the model needs");
    }
    if (entry->dtype != DType::f32 || !(entry->shape == param.shape)) {
      return error(path, ": tensor ", entry->name, " is ", dtype_name(entry->dtype), " ",
                   entry->shape.str(), ", the model needs f32 ", param.shape.str());
    }
    TensorEntry value = *entry;
    value.name = param.name;
    model.weights.emplace(param.name, std::move(value));
  }
  return model;
}

Result<std::unique_ptr<ModelVariables>> upload_for_inference(Backend& backend,
                                                             const InferenceModel& model,
                                                             const Graph& graph) {
  IC_ASSIGN_OR_RETURN(std::unique_ptr<ModelVariables> variables,
                      ModelVariables::create(backend, graph, /*moving_average=*/false));
  IC_RETURN_IF_ERROR(variables->load_eval_values(model.weights, model.checkpoint));
  variables->global_step = model.global_step;
  return variables;
}

}  // namespace ic
