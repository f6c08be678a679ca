#include "train/trainer.h"

#include <algorithm>

#include "core/host_memory.h"
#include "train/ema.h"

namespace ic {
namespace {

// Replica (or micro-batch) r draws its dropout masks from seed + r * kReplicaSeedStride.
constexpr uint64_t kReplicaSeedStride = 0x632be59bd9b4e019ull;

uint64_t dropout_seed(uint64_t seed, int64_t step) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(step) + 1;
  x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 29);
}

// What checkpoint_tensors() will copy to host memory at each save: the weights, their EMA and
// optimizer slots, the moving statistics and their EMA. Kept free when the step's arena is
// placed, so that the first save cannot be what runs out of memory.
size_t checkpoint_host_bytes(const ModelState& state) {
  const ParamLayout& layout = state.layout();
  const size_t slots = state.slot_count();
  const size_t ema = state.has_ema() ? 1 : 0;
  return sizeof(float) *
         (layout.trainable_count * (1 + ema + slots) + layout.state_count * (1 + ema));
}

// The trainable arena's ranges whose variables are under one of `scopes` (a name prefix, as
// TF-slim's get_collection(TRAINABLE_VARIABLES, scope) matches), adjacent ones merged; the
// whole arena when `scopes` is empty. A scope that matches no trainable variable is an error.
Result<std::vector<std::pair<size_t, size_t>>> update_ranges(
    const ModelState& state, const std::vector<std::string>& scopes) {
  const ParamLayout& layout = state.layout();
  if (scopes.empty()) return std::vector<std::pair<size_t, size_t>>{{0, layout.trainable_count}};
  std::vector<std::pair<size_t, size_t>> ranges;
  std::vector<bool> used(scopes.size(), false);
  for (size_t i = 0; i < state.params().size(); ++i) {
    const ParamInfo& p = state.params()[i];
    if (!p.trainable) continue;
    bool selected = false;
    for (size_t s = 0; s < scopes.size(); ++s) {
      if (p.name.starts_with(scopes[s])) selected = used[s] = true;
    }
    if (selected) ranges.emplace_back(layout.offset[i], static_cast<size_t>(p.shape.numel()));
  }
  for (size_t s = 0; s < scopes.size(); ++s) {
    if (!used[s]) {
      return error("--trainable_scopes: '", scopes[s],
                   "' matches no trainable variable of this model (names look like ",
                   state.params().front().name, ")");
    }
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<size_t, size_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && merged.back().first + merged.back().second == r.first) {
      merged.back().second += r.second;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

}  // namespace

Result<std::unique_ptr<Trainer>> Trainer::create(ModelState& state, const Graph& graph,
                                                 const TrainRecipe& recipe,
                                                 DeviceReducer* reducer) {
  IC_RETURN_IF_ERROR(state.check_matches(graph));
  if (!graph.training) return error("Trainer needs a training graph");
  if (recipe.micro_batches < 1) return error("micro_batches must be at least 1");
  std::unique_ptr<Trainer> t(new Trainer(state));
  t->recipe_ = recipe;
  t->reducer_ = reducer;
  if (recipe.optimizer == nullptr) return error("Trainer needs an optimizer");
  IC_ASSIGN_OR_RETURN(const auto ranges, update_ranges(state, recipe.trainable_scopes));
  t->update_ranges_ = describe_update_ranges(state.layout(), state.params(), ranges);
  for (size_t i = 0; i < state.params().size(); ++i) {
    const ParamInfo& p = state.params()[i];
    if (!p.trainable) continue;
    t->trainable_variables_ += 1;
    t->trainable_parameters_ += p.shape.numel();
    for (const UpdateRange& r : t->update_ranges_) {
      if (state.layout().offset[i] >= r.offset && state.layout().offset[i] < r.offset + r.count) {
        t->trained_variables_ += 1;
        t->trained_parameters_ += p.shape.numel();
        break;
      }
    }
  }
  // Replicas see different images; they also draw different dropout masks. Rank 0 keeps the
  // single-process masks.
  // Micro-batch k of replica r draws the masks replica r * micro_batches + k would.
  const uint64_t rank = reducer ? static_cast<uint64_t>(reducer->rank()) : 0;
  t->micro_batches_ = recipe.micro_batches;
  t->dropout_seed_base_ =
      recipe.seed + rank * static_cast<uint64_t>(t->micro_batches_) * kReplicaSeedStride;
  if (t->micro_batches_ > 1) {  // allocated first: the arena's check counts it
    IC_ASSIGN_OR_RETURN(t->grad_sum_,
                        state.backend().allocate(state.layout().trainable_count * sizeof(float)));
  }
  IC_ASSIGN_OR_RETURN(t->graph_,
                      CompiledGraph::compile(graph, state.backend(), state.layout(),
                                             state.train_binding(), checkpoint_host_bytes(state)));
  t->loss_terms_ = t->graph_->loss_terms();
  t->loss_host_.resize(1 + t->loss_terms_.size() * static_cast<size_t>(t->micro_batches_));
  IC_ASSIGN_OR_RETURN(t->scratch_, state.backend().allocate(t->loss_host_.size() * sizeof(float)));
  const Shape& images = graph.values.at(graph.images).shape;
  t->batch_size_ = images.n();
  t->image_floats_ = images.numel();
  return t;
}

void Trainer::step(const float* images, const int32_t* labels, bool want_loss) {
  Backend& backend = state_.backend();
  const ParamLayout& layout = state_.layout();
  float* scratch = scratch_.as<float>();
  float* grads = state_.grads();
  const size_t count = layout.trainable_count;
  for (int k = 0; k < micro_batches_; ++k) {
    backend.upload(graph_->images(), images + k * image_floats_,
                   static_cast<size_t>(image_floats_) * sizeof(float));
    backend.upload(graph_->labels(), labels + k * batch_size_,
                   static_cast<size_t>(batch_size_) * sizeof(int32_t));
    const uint64_t seed_base = dropout_seed_base_ + static_cast<uint64_t>(k) * kReplicaSeedStride;
    const StepContext ctx{dropout_seed(seed_base, state_.global_step), state_.global_step};
    graph_->forward(ctx);
    if (want_loss) stage_loss_terms(backend, loss_terms_, scratch + 1 + k * loss_terms_.size());
    graph_->backward(ctx);
    // The kernels write (=) the gradients: micro-batches add theirs up in grad_sum_.
    if (micro_batches_ == 1) break;
    if (k == 0) {
      backend.copy(grad_sum_.data(), grads, count * sizeof(float));
    } else {
      backend.add_inplace(grad_sum_.as<float>(), grads, count);
    }
  }
  if (micro_batches_ > 1) {  // the mean, as the replicas take it: a sum, then one scale
    backend.fill(grads, 0.f, count);
    backend.axpy(1.f / static_cast<float>(micro_batches_), grad_sum_.as<float>(), grads, count);
  }
  if (want_loss) backend.sum_squares(state_.weights(), layout.decayed_count, scratch);
  // Data parallel: the mean of the replicas' gradients, as TPU's CrossShardOptimizer takes.
  if (reducer_ != nullptr) reducer_->mean(state_.grads(), layout.trainable_count);
  last_learning_rate_ = learning_rate(recipe_.schedule, state_.global_step);
  const float lr = static_cast<float>(last_learning_rate_);
  // The optimizer touches only the trained ranges (the whole arena unless --trainable_scopes):
  // the other variables keep their weights and slots bit for bit.
  // Weight decay goes as the optimizer table's entry says (coupled: wd * w, the gradient of
  // wd * sum(w^2)/2, joins the gradient of the decayed prefix).
  for (const UpdateRange& range : update_ranges_) {
    OptimizerStep step;
    step.weights = state_.weights() + range.offset;
    step.grads = state_.grads() + range.offset;
    for (size_t k = 0; k < state_.slot_count(); ++k) step.slots[k] = state_.slot(k) + range.offset;
    step.count = range.count;
    step.decayed = range.decayed;
    step.variables = range.variables;
    step.learning_rate = lr;
    step.weight_decay = recipe_.weight_decay;
    step.step = state_.global_step + 1;
    step.nesterov = recipe_.nesterov;
    recipe_.optimizer->apply(backend, step, recipe_.hyperparameters);
  }
  state_.global_step += 1;
  if (recipe_.moving_average && state_.has_ema()) {
    // TF's ema.apply runs after the train op, so num_updates is the incremented step.
    const float decay = ema_decay(recipe_.moving_average_decay, state_.global_step);
    backend.ema_update(state_.ema_weights(), state_.weights(), layout.trainable_count, decay);
    backend.ema_update(state_.ema_state(), state_.state(), layout.state_count, decay);
  }
}

std::string Trainer::memory_estimate() const {
  const Backend& backend = state_.backend();
  const size_t arena = graph_->activation_bytes();
  const size_t copies = checkpoint_host_bytes(state_);
  // The batch being trained on and the one the input pipeline prepares meanwhile.
  const size_t input =
      2 * static_cast<size_t>((image_floats_ + batch_size_) * micro_batches_) * sizeof(float);
  const size_t process = resident_memory().value_or(0);
  const bool on_host = backend.kind() == DeviceKind::cpu;
  // On the CPU the arena is allocated but not yet touched, so it is not resident yet.
  const size_t host_peak = process + copies + input + (on_host ? arena : 0);
  std::string line =
      "Memory: about " + format_bytes(host_peak) + " of host memory at the peak (" +
      (on_host ? format_bytes(arena) + " activations for " + std::to_string(batch_size_) +
                     " images per " + (micro_batches_ > 1 ? "micro-batch, " : "step, ")
               : std::string()) +
      format_bytes(process) + " model state and program, " + format_bytes(copies) +
      " checkpoint copies, " + format_bytes(input) + " input batches)";
  if (const std::optional<size_t> host = available_host_memory()) {
    line += "; " + format_bytes(*host) + " available";
  }
  if (!on_host) {
    line += "; " + format_bytes(arena) + " of activations for " + std::to_string(batch_size_) +
            " images per step on " + backend.description();
    if (const std::optional<size_t> device = backend.available_memory()) {
      line += " (" + format_bytes(*device) + " free there)";
    }
  }
  return line;
}

std::string Trainer::trainable_summary() const {
  std::string line = "Training " + std::to_string(trained_variables_) + " of " +
                     std::to_string(trainable_variables_) + " trainable variables (" +
                     std::to_string(trained_parameters_) + " of " +
                     std::to_string(trainable_parameters_) + " parameters)";
  if (recipe_.trainable_scopes.empty()) return line;
  line += " under --trainable_scopes=";
  for (size_t i = 0; i < recipe_.trainable_scopes.size(); ++i) {
    line += (i ? "," : "") + recipe_.trainable_scopes[i];
  }
  return line;
}

float Trainer::loss() {
  state_.backend().download(loss_host_.data(), scratch_.data(), loss_host_.size() * sizeof(float));
  // Each micro-batch's total as one replica's, then their mean as the replicas' mean.
  double sum = 0;
  const size_t terms = loss_terms_.size();
  for (int k = 0; k < micro_batches_; ++k) {
    float total = recipe_.weight_decay * loss_host_[0] / 2.f;
    for (size_t i = 0; i < terms; ++i) total += loss_host_[1 + k * terms + i];
    sum += static_cast<double>(total);
  }
  const double mean = sum / micro_batches_;
  return static_cast<float>(reducer_ ? reducer_->mean(mean) : mean);
}

}  // namespace ic
