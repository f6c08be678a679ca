#include "serve/served_model.h"

#include <algorithm>
#include <cstring>

namespace ic {

std::vector<int64_t> batch_buckets(int64_t max_batch_size) {
  std::vector<int64_t> sizes;
  for (int64_t size = 1; size < max_batch_size; size *= 2) sizes.push_back(size);
  sizes.push_back(max_batch_size);
  return sizes;
}

ServedModel::~ServedModel() {
  // The evaluators read the state's arenas and run on the backend: they go first.
  buckets_.clear();
  state_.reset();
}

Result<std::unique_ptr<ServedModel>> ServedModel::load(const BackendOptions& backend_options,
                                                       const std::string& model_dir,
                                                       const std::string& checkpoint,
                                                       int64_t max_batch_size) {
  if (max_batch_size < 1) return error("bad max_batch_size ", max_batch_size, " (1 or more)");
  IC_ASSIGN_OR_RETURN(TrainedModel trained, load_trained_model(model_dir, checkpoint));
  auto model = std::make_unique<ServedModel>(Key());
  model->checkpoint_ = trained.checkpoint;
  // TF Serving's rule: an export reports its directory number, a checkpoint its global step.
  model->version_ = export_version_of(trained.checkpoint).value_or(trained.global_step);
  model->meta_ = trained.meta;
  // A backend of its own: a model loaded in the background never shares one with the model
  // that is answering meanwhile.
  IC_ASSIGN_OR_RETURN(model->backend_, make_backend(backend_options));
  const std::vector<int64_t> sizes = batch_buckets(max_batch_size);
  for (int64_t size : sizes) {
    Bucket bucket;
    bucket.size = size;
    IC_ASSIGN_OR_RETURN(bucket.graph, build_inference_graph(trained, size));
    if (!model->state_) {
      IC_ASSIGN_OR_RETURN(
          model->state_, ModelState::create(*model->backend_, bucket.graph, nullptr, false, false));
      // The values load_trained_model picked (EMA shadows for weights) go straight into the
      // eval arenas.
      ModelState& state = *model->state_;
      const ParamBinding binding = state.eval_binding();
      for (size_t i = 0; i < state.params().size(); ++i) {
        const ParamInfo& param = state.params()[i];
        auto found = trained.weights.find(param.name);
        if (found == trained.weights.end()) {
          return error(trained.checkpoint, ": checkpoint has no tensor ", param.name,
                       " that the model needs");
        }
        float* arena = param.trainable ? const_cast<float*>(binding.weights) : binding.state;
        state.backend().upload(arena + state.layout().offset[i], found->second.bytes.data(),
                               found->second.bytes.size());
      }
      state.global_step = trained.global_step;
      state.backend().synchronize();
    }
    IC_ASSIGN_OR_RETURN(bucket.evaluator, Evaluator::create(*model->state_, bucket.graph, 0.f));
    bucket.input.assign(static_cast<size_t>(size * model->image_floats()), 0.f);
    model->buckets_.push_back(std::move(bucket));
  }
  return model;
}

void ServedModel::run(const float* const* images, int64_t count, float* logits) {
  auto bucket = std::find_if(buckets_.begin(), buckets_.end(),
                             [&](const Bucket& b) { return b.size >= count; });
  const size_t floats = static_cast<size_t>(image_floats());
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(bucket->input.data() + i * floats, images[i], floats * sizeof(float));
  }
  // Rows count..size-1 are padding: whatever an earlier batch left there is computed and
  // ignored (inference rows are independent).
  bucket->evaluator->run_batch(bucket->input.data(), nullptr);
  const std::vector<float>& out = bucket->evaluator->logits();
  std::memcpy(logits, out.data(), static_cast<size_t>(count * num_classes()) * sizeof(float));
}

}  // namespace ic
