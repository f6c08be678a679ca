#include "serve/served_model.h"

#include <algorithm>
#include <cstring>

#include "infer/onnx_import.h"

namespace ic {

std::vector<int64_t> batch_buckets(int64_t max_batch_size) {
  std::vector<int64_t> sizes;
  for (int64_t size = 1; size < max_batch_size; size *= 2) sizes.push_back(size);
  sizes.push_back(max_batch_size);
  return sizes;
}

ServedModel::~ServedModel() {
  // The compiled graphs run on the backend: they go first.
  runner_.reset();
}

Result<std::unique_ptr<ServedModel>> ServedModel::load(const BackendOptions& backend_options,
                                                       const std::string& model_dir,
                                                       const std::string& checkpoint,
                                                       int64_t max_batch_size,
                                                       ServePrecision precision) {
  if (max_batch_size < 1) return error("bad max_batch_size ", max_batch_size, " (1 or more)");
  IC_ASSIGN_OR_RETURN(InferenceModel trained, load_servable_model(model_dir, checkpoint));
  auto model = std::make_unique<ServedModel>(Key());
  model->checkpoint_ = trained.checkpoint;
  // TF Serving's rule: an export reports its directory number, a checkpoint its global step.
  model->version_ = export_version_of(trained.checkpoint).value_or(trained.global_step);
  model->meta_ = trained.meta;
  // A backend of its own: a model loaded in the background never shares one with the model
  // that is answering meanwhile.
  IC_ASSIGN_OR_RETURN(model->backend_, make_backend(backend_options));
  model->buckets_ = batch_buckets(max_batch_size);
  IC_ASSIGN_OR_RETURN(PrecisionRunner compiled,
                      compile_in_precision(*model->backend_, trained, model->buckets_, precision));
  model->runner_ = std::move(compiled.runner);
  model->precision_ = compiled.precision;
  model->precision_reason_ = std::move(compiled.reason);
  model->input_.assign(static_cast<size_t>(max_batch_size * model->image_floats()), 0.f);
  model->padded_logits_.assign(static_cast<size_t>(max_batch_size * model->num_classes()), 0.f);
  return model;
}

void ServedModel::run(const float* const* images, int64_t count, float* logits) {
  const int64_t bucket =
      *std::find_if(buckets_.begin(), buckets_.end(), [&](int64_t size) { return size >= count; });
  const size_t floats = static_cast<size_t>(image_floats());
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(input_.data() + i * floats, images[i], floats * sizeof(float));
  }
  // Rows count..bucket-1 are padding: whatever an earlier batch left there is computed and
  // ignored (inference rows are independent). Only the first `count` rows' logits are kept.
  runner_->run(bucket, input_.data(), padded_logits_.data());
  std::memcpy(logits, padded_logits_.data(),
              static_cast<size_t>(count * num_classes()) * sizeof(float));
}

}  // namespace ic
