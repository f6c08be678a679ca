#include "runtime/model_variables.h"

#include <algorithm>

#include "runtime/param_init.h"

namespace ic {

Result<std::unique_ptr<ModelVariables>> ModelVariables::create(Backend& backend, const Graph& graph,
                                                               bool moving_average) {
  std::unique_ptr<ModelVariables> v(new ModelVariables(backend));
  IC_RETURN_IF_ERROR(v->allocate(graph, moving_average));
  return v;
}

Result<DeviceBuffer> ModelVariables::allocate_floats(size_t count) {
  return backend_.allocate(std::max<size_t>(count, 16) * sizeof(float));
}

Status ModelVariables::allocate(const Graph& graph, bool moving_average) {
  params_ = graph.params;
  layout_ = ParamLayout::plan(graph);
  moving_average_ = moving_average;
  const size_t trainable = layout_.trainable_count, state = layout_.state_count;
  IC_ASSIGN_OR_RETURN(weights_, allocate_floats(trainable));
  IC_ASSIGN_OR_RETURN(state_, allocate_floats(state));
  if (moving_average) {
    IC_ASSIGN_OR_RETURN(ema_weights_, allocate_floats(trainable));
    IC_ASSIGN_OR_RETURN(ema_state_, allocate_floats(state));
  }
  return Status();
}

std::vector<ModelVariables::Slice> ModelVariables::slices() const {
  std::vector<Slice> out;
  for (size_t i = 0; i < params_.size(); ++i) add_slices(i, &out);
  return out;
}

void ModelVariables::add_slices(size_t i, std::vector<Slice>* out) const {
  const bool t = params_[i].trainable;
  out->push_back({params_[i].name, i, t ? weights() : state(), t});
  if (moving_average_) {
    out->push_back(
        {params_[i].name + "/ExponentialMovingAverage", i, t ? ema_weights() : ema_state(), t});
  }
}

Status ModelVariables::initialize(uint64_t seed) {
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
  backend_.synchronize();
  global_step = 0;
  return Status();
}

void ModelVariables::reset_shadows() {
  if (!moving_average_) return;
  backend_.copy(ema_weights(), weights(), layout_.trainable_count * sizeof(float));
  backend_.copy(ema_state(), state(), layout_.state_count * sizeof(float));
}

Status ModelVariables::check_entry(const TensorEntry& entry, const ParamInfo& param,
                                   const std::string& path) {
  if (entry.dtype != DType::f32 || entry.shape.numel() != param.shape.numel() ||
      !(entry.shape == param.shape)) {
    return error(path, ": tensor ", entry.name, " is ", dtype_name(entry.dtype), " ",
                 entry.shape.str(), ", the model needs f32 ", param.shape.str());
  }
  return Status();
}

Status ModelVariables::upload_eval_values(const FindValue& find, const std::string& path) {
  const ParamBinding binding = eval_binding();
  float* weights = const_cast<float*>(binding.weights);
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo& param = params_[i];
    const TensorEntry* entry = find(param);
    if (entry == nullptr) {
      return error(path, ": checkpoint has no tensor ", param.name, " that the model needs");
    }
    IC_RETURN_IF_ERROR(check_entry(*entry, param, path));
    float* arena = param.trainable ? weights : binding.state;
    backend_.upload(arena + layout_.offset[i], entry->bytes.data(), entry->bytes.size());
  }
  backend_.synchronize();
  return Status();
}

Status ModelVariables::restore_for_eval(const CheckpointContents& file, bool use_ema,
                                        const std::string& path) {
  IC_RETURN_IF_ERROR(upload_eval_values(
      [&](const ParamInfo& param) {
        const TensorEntry* entry =
            use_ema ? file.find(param.name + "/ExponentialMovingAverage") : nullptr;
        return entry != nullptr ? entry : file.find(param.name);
      },
      path));
  IC_ASSIGN_OR_RETURN(global_step, read_global_step(file, path));
  return Status();
}

Status ModelVariables::load_eval_values(const std::map<std::string, TensorEntry>& values,
                                        const std::string& path) {
  return upload_eval_values(
      [&](const ParamInfo& param) -> const TensorEntry* {
        auto found = values.find(param.name);
        return found == values.end() ? nullptr : &found->second;
      },
      path);
}

std::vector<TensorView> ModelVariables::checkpoint_tensors() {
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

Status ModelVariables::check_matches(const Graph& graph) const {
  if (graph.params.size() != params_.size()) {
    return error("graph has ", graph.params.size(), " parameters, the model state ",
                 params_.size());
  }
  for (size_t i = 0; i < graph.params.size(); ++i) {
    if (graph.params[i].name != params_[i].name || !(graph.params[i].shape == params_[i].shape)) {
      return error("graph parameter ", graph.params[i].name, " ", graph.params[i].shape.str(),
                   " does not match the model state's ", params_[i].name);
    }
  }
  return Status();
}

ParamBinding ModelVariables::eval_binding() const {
  if (moving_average_) return ParamBinding{ema_weights(), ema_state(), nullptr};
  return ParamBinding{weights(), state(), nullptr};
}

}  // namespace ic
