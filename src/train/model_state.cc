#include "train/model_state.h"

#include <cstring>
#include <sstream>

#include "train/param_init.h"

namespace ic {
namespace {

Result<DeviceBuffer> allocate_floats(Backend& backend, size_t count) {
  // At least one cache line, so an empty arena still has a valid pointer.
  return backend.allocate(std::max<size_t>(count, 16) * sizeof(float));
}

std::string format_double(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

std::map<std::string, std::string> checkpoint_metadata(const CheckpointMeta& meta) {
  return {{"format_version", kCheckpointFormatVersion},
          {"model", meta.model},
          {"num_classes", std::to_string(meta.num_classes)},
          {"height", std::to_string(meta.height)},
          {"width", std::to_string(meta.width)},
          {"depth_multiplier", format_double(meta.depth_multiplier)},
          {"flags", meta.flags}};
}

Result<CheckpointMeta> parse_checkpoint_metadata(const std::map<std::string, std::string>& metadata,
                                                 const std::string& path) {
  auto get = [&](const char* key) -> Result<std::string> {
    auto it = metadata.find(key);
    if (it == metadata.end()) {
      return error(path, ": checkpoint metadata has no '", key,
                   "' (not written by inception.cpp?)");
    }
    return it->second;
  };
  CheckpointMeta meta;
  try {
    IC_ASSIGN_OR_RETURN(std::string version, get("format_version"));
    if (version != kCheckpointFormatVersion) {
      return error(path, ": checkpoint format version ", version, ", this program reads ",
                   kCheckpointFormatVersion);
    }
    IC_ASSIGN_OR_RETURN(meta.model, get("model"));
    IC_ASSIGN_OR_RETURN(std::string classes, get("num_classes"));
    meta.num_classes = std::stoll(classes);
    IC_ASSIGN_OR_RETURN(std::string height, get("height"));
    meta.height = std::stoi(height);
    IC_ASSIGN_OR_RETURN(std::string width, get("width"));
    meta.width = std::stoi(width);
    IC_ASSIGN_OR_RETURN(std::string depth, get("depth_multiplier"));
    meta.depth_multiplier = std::stod(depth);
  } catch (const std::exception&) {
    return error(path, ": malformed number in checkpoint metadata");
  }
  auto flags = metadata.find("flags");
  if (flags != metadata.end()) meta.flags = flags->second;
  return meta;
}

std::string describe(const CheckpointMeta& meta) {
  std::ostringstream out;
  out << meta.model << ", " << meta.num_classes << " classes, depth_multiplier "
      << meta.depth_multiplier << ", " << meta.height << "x" << meta.width << " images";
  return out.str();
}

Status check_compatible(const CheckpointMeta& saved, const CheckpointMeta& run,
                        const std::string& path) {
  if (saved.model == run.model && saved.num_classes == run.num_classes &&
      static_cast<float>(saved.depth_multiplier) == static_cast<float>(run.depth_multiplier)) {
    return Status();
  }
  return error("incompatible model_dir: ", path, " holds ", describe(saved), "; this run is ",
               describe(run),
               " (use another --model_dir, or the flags the checkpoint was trained with)");
}

Result<std::unique_ptr<ModelState>> ModelState::create(Backend& backend, const Graph& graph,
                                                       const Optimizer* optimizer, bool training,
                                                       bool moving_average) {
  if (training && optimizer == nullptr) return error("a training model state needs an optimizer");
  std::unique_ptr<ModelState> s(new ModelState(backend));
  s->params_ = graph.params;
  s->layout_ = ParamLayout::plan(graph);
  s->optimizer_ = optimizer;
  s->training_ = training;
  s->moving_average_ = moving_average;
  const size_t trainable = s->layout_.trainable_count, state = s->layout_.state_count;
  IC_ASSIGN_OR_RETURN(s->weights_, allocate_floats(backend, trainable));
  IC_ASSIGN_OR_RETURN(s->state_, allocate_floats(backend, state));
  if (training) {
    IC_ASSIGN_OR_RETURN(s->grads_, allocate_floats(backend, trainable));
    for (size_t k = 0; k < optimizer->slots.size(); ++k) {
      IC_ASSIGN_OR_RETURN(DeviceBuffer slot, allocate_floats(backend, trainable));
      s->slots_.push_back(std::move(slot));
    }
  }
  if (moving_average) {
    IC_ASSIGN_OR_RETURN(s->ema_weights_, allocate_floats(backend, trainable));
    IC_ASSIGN_OR_RETURN(s->ema_state_, allocate_floats(backend, state));
  }
  return s;
}

std::vector<ModelState::Slice> ModelState::slices() const {
  std::vector<Slice> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo& p = params_[i];
    const bool t = p.trainable;
    out.push_back({p.name, i, t ? weights() : state(), t});
    if (moving_average_) {
      out.push_back({p.name + "/ExponentialMovingAverage", i, t ? ema_weights() : ema_state(), t});
    }
    for (size_t k = 0; t && k < slots_.size(); ++k) {
      out.push_back({p.name + "/" + optimizer_->slots[k].suffix, i, slot(k), true});
    }
  }
  return out;
}

Status ModelState::initialize(uint64_t seed) {
  std::vector<float> trainable(layout_.trainable_count), state(layout_.state_count);
  for (size_t i = 0; i < params_.size(); ++i) {
    std::vector<float>& arena = params_[i].trainable ? trainable : state;
    init_param(params_[i], seed, i, arena.data() + layout_.offset[i]);
  }
  const size_t tbytes = trainable.size() * sizeof(float), sbytes = state.size() * sizeof(float);
  backend_.upload(weights(), trainable.data(), tbytes);
  backend_.upload(this->state(), state.data(), sbytes);
  if (moving_average_) {
    backend_.upload(ema_weights(), trainable.data(), tbytes);
    backend_.upload(ema_state(), state.data(), sbytes);
  }
  for (size_t k = 0; k < slots_.size(); ++k) {
    backend_.fill(slot(k), optimizer_->slots[k].initial_value, trainable.size());
  }
  backend_.synchronize();
  global_step = 0;
  return Status();
}

namespace {

Status check_entry(const TensorEntry& entry, const ParamInfo& param, const std::string& path) {
  if (entry.dtype != DType::f32 || entry.shape.numel() != param.shape.numel() ||
      !(entry.shape == param.shape)) {
    return error(path, ": tensor ", entry.name, " is ", dtype_name(entry.dtype), " ",
                 entry.shape.str(), ", the model needs f32 ", param.shape.str());
  }
  return Status();
}

}  // namespace

Result<int64_t> read_global_step(const CheckpointContents& file, const std::string& path) {
  const TensorEntry* step = file.find("global_step");
  if (step == nullptr) return error(path, ": checkpoint has no global_step");
  if (step->dtype == DType::i64 && step->bytes.size() == 8) {
    int64_t value;
    std::memcpy(&value, step->bytes.data(), 8);
    return value;
  }
  if (step->dtype == DType::i32 && step->bytes.size() == 4) {
    int32_t value;
    std::memcpy(&value, step->bytes.data(), 4);
    return int64_t{value};
  }
  return error(path, ": global_step is not an int64 scalar");
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
    // Shadows start at the restored values, as a fresh shadow of a restored variable would.
    backend_.copy(ema_weights(), weights(), layout_.trainable_count * sizeof(float));
    backend_.copy(ema_state(), state(), layout_.state_count * sizeof(float));
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
  if (moving_average_) {  // a fresh shadow starts at its variable's value
    backend_.copy(ema_weights(), weights(), layout_.trainable_count * sizeof(float));
    backend_.copy(ema_state(), state(), layout_.state_count * sizeof(float));
  }
  backend_.synchronize();
  return Status();
}

Status ModelState::restore_for_eval(const CheckpointContents& file, bool use_ema,
                                    const std::string& path) {
  const ParamBinding binding = eval_binding();
  float* weights = const_cast<float*>(binding.weights);
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo& param = params_[i];
    const TensorEntry* entry =
        use_ema ? file.find(param.name + "/ExponentialMovingAverage") : nullptr;
    if (entry == nullptr) entry = file.find(param.name);
    if (entry == nullptr) {
      return error(path, ": checkpoint has no tensor ", param.name, " that the model needs");
    }
    IC_RETURN_IF_ERROR(check_entry(*entry, param, path));
    float* arena = param.trainable ? weights : binding.state;
    backend_.upload(arena + layout_.offset[i], entry->bytes.data(), entry->bytes.size());
  }
  IC_ASSIGN_OR_RETURN(global_step, read_global_step(file, path));
  backend_.synchronize();
  return Status();
}

std::vector<TensorView> ModelState::checkpoint_tensors() {
  const std::vector<Slice> all = slices();
  // Download each distinct arena once.
  std::vector<const float*> arenas;
  host_copies_.clear();
  std::vector<TensorView> views;
  for (const Slice& slice : all) {
    size_t index = 0;
    while (index < arenas.size() && arenas[index] != slice.arena) ++index;
    if (index == arenas.size()) {
      const size_t count = slice.trainable_arena ? layout_.trainable_count : layout_.state_count;
      arenas.push_back(slice.arena);
      host_copies_.emplace_back(count);
      backend_.download(host_copies_.back().data(), slice.arena, count * sizeof(float));
    }
    const ParamInfo& param = params_[slice.param];
    views.push_back({slice.name, DType::f32, param.shape,
                     host_copies_[index].data() + layout_.offset[slice.param]});
  }
  host_step_ = global_step;
  views.push_back({"global_step", DType::i64, Shape{}, &host_step_});
  return views;
}

ParamBinding ModelState::train_binding() const { return ParamBinding{weights(), state(), grads()}; }

ParamBinding ModelState::eval_binding() const {
  if (moving_average_) return ParamBinding{ema_weights(), ema_state(), nullptr};
  return ParamBinding{weights(), state(), nullptr};
}

}  // namespace ic
