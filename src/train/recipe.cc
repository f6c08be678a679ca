#include "train/recipe.h"

#include <sstream>
#include <string_view>

#include "models/model_spec.h"
#include "train/flag_table.h"

namespace ic {

Result<int> micro_batches_for(const RunOptions& options, int replica_count) {
  const int64_t per_process = options.train_batch_size / replica_count;
  if (options.micro_batch_size == 0 || options.micro_batch_size == per_process) return 1;
  if (options.micro_batch_size > per_process || per_process % options.micro_batch_size != 0) {
    return error("--micro_batch_size=", options.micro_batch_size, " does not divide the ",
                 per_process, " training images of each step",
                 replica_count > 1 ? " and process" : "", " evenly");
  }
  return static_cast<int>(per_process / options.micro_batch_size);
}

Result<ModelOptions> model_options_for(const RunOptions& options, bool training,
                                       int replica_count) {
  IC_ASSIGN_OR_RETURN(ModelOptions m, default_model_options(options.model));
  const int64_t global = training ? options.train_batch_size : options.eval_batch_size;
  if (global % replica_count != 0) {
    return error("--", training ? "train" : "eval", "_batch_size=", global,
                 " does not split evenly over ", replica_count, " replicas");
  }
  m.batch_size = global / replica_count;
  if (training) {
    IC_ASSIGN_OR_RETURN(const int micro_batches, micro_batches_for(options, replica_count));
    m.batch_size /= micro_batches;
  }
  m.height = options.height;
  m.width = options.width;
  m.num_classes = options.num_classes;
  m.depth_multiplier = static_cast<float>(options.depth_multiplier);
  m.label_smoothing = static_cast<float>(options.label_smoothing);
  m.batch_norm_decay = static_cast<float>(options.batch_norm_decay);
  m.training = training;
  // The contrib model always builds AuxLogits, so the eval loss has the aux term too.
  m.aux_logits = true;
  m.build_losses = true;
  m.compute = options.precision == Precision::bfloat16 ? DType::bf16 : DType::f32;
  return m;
}

DType activations_for(Precision precision, const Backend& backend) {
  const bool bf16 = precision == Precision::bfloat16 && backend.has_native_bf16() &&
                    backend.supports_bf16_activations();
  return bf16 ? DType::bf16 : DType::f32;
}

Result<TrainRecipe> train_recipe_for(const RunOptions& options) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(options.model));
  TrainRecipe r;
  r.optimizer = options.optimizer;
  r.nesterov = spec->recipe.nesterov;
  r.weight_decay = static_cast<float>(options.weight_decay);
  r.moving_average = options.moving_average;
  r.moving_average_decay = static_cast<float>(options.moving_average_decay);
  if (r.optimizer != nullptr && std::string_view(r.optimizer->name) == "RMS") {
    r.hyperparameters = r.optimizer->hyperparameters;
    for (Hyperparameter& h : r.hyperparameters)
      if (std::string_view(h.name) == "epsilon") h.value = options.rmsprop_epsilon;
  }
  r.seed = static_cast<uint64_t>(options.seed);
  IC_ASSIGN_OR_RETURN(r.schedule, default_lr_schedule(options.model));
  r.schedule.base_learning_rate = options.learning_rate;
  r.schedule.train_batch_size = options.train_batch_size;
  r.schedule.decay_rate = options.learning_rate_decay;
  r.schedule.decay_epochs = options.learning_rate_decay_epochs;
  r.schedule.use_warmup = options.use_learning_rate_warmup;
  r.schedule.cold_epochs = options.cold_epochs;
  r.schedule.warmup_epochs = options.warmup_epochs;
  r.schedule.cold_learning_rate = options.cold_learning_rate;
  r.schedule.train_steps = options.train_steps;
  r.schedule.num_train_images = options.num_train_images;
  IC_RETURN_IF_ERROR(validate_lr_schedule(r.schedule));
  // TF-slim: [scope.strip() for scope in FLAGS.trainable_scopes.split(',')].
  if (!options.trainable_scopes.empty()) {
    std::stringstream list(options.trainable_scopes);
    for (std::string scope; std::getline(list, scope, ',');) {
      const size_t begin = scope.find_first_not_of(" \t");
      const size_t end = scope.find_last_not_of(" \t");
      if (begin == std::string::npos) {
        return error("--trainable_scopes='", options.trainable_scopes,
                     "' has an empty scope (give comma-separated scope prefixes such as ",
                     "InceptionV3/Logits,InceptionV3/AuxLogits)");
      }
      r.trainable_scopes.push_back(scope.substr(begin, end - begin + 1));
    }
    if (options.trainable_scopes.back() == ',') {
      return error("--trainable_scopes='", options.trainable_scopes, "' ends with a comma");
    }
  }
  return r;
}

CheckpointMeta checkpoint_meta_for(const RunOptions& options) {
  CheckpointMeta meta;
  meta.model = options.model;
  meta.num_classes = options.num_classes;
  meta.height = options.height;
  meta.width = options.width;
  meta.depth_multiplier = options.depth_multiplier;
  meta.preprocessing = options.preprocessing;
  meta.flags = flags_as_text(options);
  return meta;
}

}  // namespace ic
