#include "infer/trained_model.h"

#include "io/checkpoint_dir.h"
#include "train/checkpoint_checks.h"

namespace ic {

Result<std::string> resolve_checkpoint(const std::string& model_dir,
                                       const std::string& checkpoint) {
  if (!checkpoint.empty()) return checkpoint;
  if (model_dir.empty()) return error("give --model_dir or --checkpoint");
  IC_ASSIGN_OR_RETURN(std::optional<std::string> latest, latest_checkpoint(model_dir));
  if (!latest) return error("no checkpoint in ", model_dir);
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

Result<Graph> build_inference_graph(const TrainedModel& model, int64_t batch_size) {
  ModelOptions options = model.options;
  options.batch_size = batch_size;
  return build_model(options);
}

Result<TrainedModel> load_trained_model(const std::string& model_dir,
                                        const std::string& checkpoint) {
  TrainedModel model;
  IC_ASSIGN_OR_RETURN(model.checkpoint, resolve_checkpoint(model_dir, checkpoint));
  const std::string& path = model.checkpoint;
  IC_ASSIGN_OR_RETURN(CheckpointContents file, read_checkpoint(path));
  IC_ASSIGN_OR_RETURN(model.meta, checked_checkpoint_meta(file, path));
  IC_ASSIGN_OR_RETURN(model.options, inference_model_options(model.meta, 1));
  IC_ASSIGN_OR_RETURN(Graph graph, build_model(model.options));

  IC_ASSIGN_OR_RETURN(model.global_step, read_global_step(file, path));

  for (const ParamInfo& param : graph.params) {
    // As evaluation (LoadEMAHook, ModelState::restore_for_eval) and classify: the shadow of
    // every averaged variable, moving statistics included (the reference averages
    // trainable_variables() + moving_average_variables()).
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

}  // namespace ic
