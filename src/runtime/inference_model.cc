#include "runtime/inference_model.h"

#include <algorithm>

#include "io/checkpoint_dir.h"
#include "io/file_system.h"
#include "runtime/checkpoint_checks.h"
#include "runtime/int8_tensors.h"

namespace ic {

namespace {

constexpr const char* kExportFile = "model.safetensors";

// The value of a version directory's name, or nullopt when it is not all digits (temp-N,
// anything else a person left there).
std::optional<int64_t> version_number(const std::string& name) {
  if (name.empty() || name.size() > 18) return std::nullopt;
  if (!std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(name);
}

}  // namespace

std::optional<int64_t> export_version_of(const std::string& path) {
  if (base_name(path) != kExportFile) return std::nullopt;
  return version_number(base_name(parent_path(path)));
}

Result<std::optional<std::string>> newest_servable(const std::string& dir) {
  IC_ASSIGN_OR_RETURN(std::optional<std::string> latest, latest_checkpoint(dir));
  if (latest) return latest;
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(dir));
  // A directory that does not exist (yet) holds nothing to serve, as one without a
  // `checkpoint` file: the callers say "no checkpoint in DIR", serve waits for one.
  IC_ASSIGN_OR_RETURN(bool is_dir, fs->is_directory(dir));
  if (!is_dir) return std::optional<std::string>();
  IC_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->list(dir));
  std::vector<std::pair<int64_t, std::string>> versions;
  for (const DirEntry& entry : entries) {
    if (!entry.is_directory) continue;
    if (std::optional<int64_t> number = version_number(entry.name))
      versions.emplace_back(*number, entry.name);
  }
  std::sort(versions.rbegin(), versions.rend());
  for (const auto& [number, name] : versions) {
    const std::string path = join_path(join_path(dir, name), kExportFile);
    IC_ASSIGN_OR_RETURN(bool found, fs->exists(path));
    if (found) return std::optional<std::string>(path);
  }
  return std::optional<std::string>();
}

Result<std::string> resolve_checkpoint(const std::string& model_dir,
                                       const std::string& checkpoint) {
  if (!checkpoint.empty()) return checkpoint;
  if (model_dir.empty()) return invalid_argument("give --model_dir or --checkpoint");
  IC_ASSIGN_OR_RETURN(std::optional<std::string> latest, newest_servable(model_dir));
  if (!latest) {
    return not_found("no checkpoint in ", model_dir,
                     " (neither a `checkpoint` file nor a numbered export holding ", kExportFile,
                     ")");
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
  IC_ASSIGN_OR_RETURN(CheckpointContents file, read_checkpoint(path));
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
  IC_ASSIGN_OR_RETURN(Graph graph, build_model(model.options));

  IC_ASSIGN_OR_RETURN(model.global_step, read_global_step(file, path));

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
