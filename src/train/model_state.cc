#include "train/model_state.h"

namespace ic {

Result<std::unique_ptr<ModelState>> ModelState::create(Backend& backend, const Graph& graph,
                                                       const Optimizer* optimizer, bool training,
                                                       bool moving_average) {
  if (training && optimizer == nullptr) return error("a training model state needs an optimizer");
  std::unique_ptr<ModelState> s(new ModelState(backend));
  IC_RETURN_IF_ERROR(s->allocate(graph, moving_average));
  s->optimizer_ = optimizer;
  s->training_ = training;
  if (training) {
    const size_t trainable = s->layout_.trainable_count;
    IC_ASSIGN_OR_RETURN(s->grads_, s->allocate_floats(trainable));
    for (size_t k = 0; k < optimizer->slots.size(); ++k) {
      IC_ASSIGN_OR_RETURN(DeviceBuffer slot, s->allocate_floats(trainable));
      s->slots_.push_back(std::move(slot));
    }
  }
  return s;
}

void ModelState::add_slices(size_t i, std::vector<Slice>* out) const {
  ModelVariables::add_slices(i, out);
  const ParamInfo& p = params_[i];
  for (size_t k = 0; p.trainable && k < slots_.size(); ++k) {
    out->push_back({p.name + "/" + optimizer_->slots[k].suffix, i, slot(k), true});
  }
}

Status ModelState::initialize(uint64_t seed) {
  IC_RETURN_IF_ERROR(ModelVariables::initialize(seed));
  for (size_t k = 0; k < slots_.size(); ++k) {
    backend_.fill(slot(k), optimizer_->slots[k].initial_value, layout_.trainable_count);
  }
  backend_.synchronize();
  return Status();
}

Status ModelState::restore_for_training(const CheckpointContents& file, const std::string& path,
                                        std::vector<std::string>* notes) {
  IC_RETURN_IF_ERROR(initialize(0));
  bool missing_slots = false, missing_ema = false;
  for (const Slice& slice : slices()) {
    const ParamInfo& param = params_[slice.param];
    const TensorEntry* entry = file.find(slice.name);
    if (entry == nullptr) {
      if (slice.name == param.name) {
        return error(path, ": checkpoint has no tensor ", slice.name, " that the model needs");
      }
      const bool ema = slice.name.size() > param.name.size() &&
                       slice.name.find("ExponentialMovingAverage") != std::string::npos;
      (ema ? missing_ema : missing_slots) = true;
      continue;
    }
    IC_RETURN_IF_ERROR(check_entry(*entry, param, path));
    backend_.upload(slice.arena + layout_.offset[slice.param], entry->bytes.data(),
                    entry->bytes.size());
  }
  if (missing_ema) {
    reset_shadows();
    notes->push_back(path + " has no ExponentialMovingAverage shadows; they start at the weights");
  }
  if (missing_slots) {
    notes->push_back(path + " has no slots for this --optimizer; they start fresh");
  }
  IC_ASSIGN_OR_RETURN(global_step, read_global_step(file, path));
  backend_.synchronize();
  return Status();
}

Status ModelState::warm_start(const CheckpointContents& file, const std::string& path,
                              std::vector<std::string>* loaded, std::vector<std::string>* skipped) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo& param = params_[i];
    const TensorEntry* entry = file.find(param.name);
    if (entry == nullptr) {
      skipped->push_back(param.name + " (not in the checkpoint)");
      continue;
    }
    if (!check_entry(*entry, param, path).ok()) {
      skipped->push_back(param.name + " (the checkpoint's is " + dtype_name(entry->dtype) + " " +
                         entry->shape.str() + ", the model's float32 " + param.shape.str() + ")");
      continue;
    }
    float* arena = param.trainable ? weights() : state();
    backend_.upload(arena + layout_.offset[i], entry->bytes.data(), entry->bytes.size());
    loaded->push_back(param.name);
  }
  if (loaded->empty()) {
    return error(path, ": no variable of this model is in the checkpoint with its shape (",
                 params_.size(), " looked for, e.g. ",
                 params_.empty() ? std::string("none") : params_.front().name, ")");
  }
  reset_shadows();  // a fresh shadow starts at its variable's value
  backend_.synchronize();
  return Status();
}

}  // namespace ic
