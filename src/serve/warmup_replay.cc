#include "serve/warmup_replay.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "io/file_system.h"
#include "runtime/inference_model.h"
#include "serve/grpc_tensors.h"
#include "serve/warmup.h"

namespace ic {
namespace {

using tensorflow::serving::PredictionLog;

// One record's instances, preprocessed [count, H, W, 3].
struct Instances {
  int64_t count = 0;
  std::vector<float> floats;
};

Result<Instances> predict_instances(const tensorflow::serving::PredictRequest& request,
                                    const InstanceOptions& options, int64_t image_floats) {
  IC_ASSIGN_OR_RETURN(PredictSignature signature,
                      predict_signature(request.model_spec().signature_name()));
  IC_ASSIGN_OR_RETURN(TensorImages images, request_images(request, signature, options));
  Instances instances{images.count,
                      std::vector<float>(static_cast<size_t>(images.count * image_floats))};
  for (int64_t i = 0; i < images.count; ++i) {
    IC_RETURN_IF_ERROR(
        fill_tensor_image(images, i, options, instances.floats.data() + i * image_floats));
  }
  return instances;
}

Result<Instances> classify_instances(const tensorflow::serving::ClassificationRequest& request,
                                     const InstanceOptions& options, int64_t image_floats) {
  IC_ASSIGN_OR_RETURN(std::vector<std::string_view> images, example_images(request.input()));
  const auto count = static_cast<int64_t>(images.size());
  Instances instances{count, std::vector<float>(static_cast<size_t>(count * image_floats))};
  for (int64_t i = 0; i < count; ++i) {
    IC_RETURN_IF_ERROR(fill_encoded_image(images[static_cast<size_t>(i)], static_cast<size_t>(i),
                                          options, instances.floats.data() + i * image_floats));
  }
  return instances;
}

// Runs the instances in batches the model was compiled for.
void run_instances(ServedModel& model, const Instances& instances) {
  const int64_t floats = model.image_floats();
  std::vector<float> logits(static_cast<size_t>(model.max_batch_size() * model.num_classes()));
  std::vector<const float*> rows;
  for (int64_t first = 0; first < instances.count; first += model.max_batch_size()) {
    const int64_t count = std::min(model.max_batch_size(), instances.count - first);
    rows.clear();
    for (int64_t i = 0; i < count; ++i)
      rows.push_back(instances.floats.data() + (first + i) * floats);
    model.run(rows.data(), count, logits.data());
  }
}

// The directory of the export version `model` was loaded from, or nullopt for a checkpoint.
std::optional<std::string> version_dir(const ServedModel& model) {
  if (!export_version_of(model.checkpoint())) return std::nullopt;
  const size_t slash = model.checkpoint().rfind('/');
  if (slash == std::string::npos) return std::string(".");
  return model.checkpoint().substr(0, slash);
}

}  // namespace

Result<std::optional<WarmupReplay>> replay_warmup(ServedModel& model,
                                                  const InstanceOptions& options) {
  const std::optional<std::string> dir = version_dir(model);
  if (!dir) return std::optional<WarmupReplay>();
  const std::string file = warmup_file_of(*dir);
  IC_ASSIGN_OR_RETURN(bool present, path_exists(file));
  if (!present) return std::optional<WarmupReplay>();

  const auto start = std::chrono::steady_clock::now();
  IC_ASSIGN_OR_RETURN(std::vector<PredictionLog> logs, read_warmup_requests(file));
  for (size_t i = 0; i < logs.size(); ++i) {
    const PredictionLog& log = logs[i];
    Result<Instances> instances =
        log.has_predict_log()
            ? predict_instances(log.predict_log().request(), options, model.image_floats())
            : classify_instances(log.classify_log().request(), options, model.image_floats());
    if (!instances.ok()) {
      return error(instances.status().code(), file, ": warm-up record ", i + 1, ": ",
                   instances.status().message());
    }
    if (instances->count == 0) {
      return invalid_argument(file, ": warm-up record ", i + 1, " holds no instance");
    }
    run_instances(model, *instances);
  }
  WarmupReplay replay;
  replay.file = file;
  replay.requests = static_cast<int64_t>(logs.size());
  replay.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::optional<WarmupReplay>(std::move(replay));
}

}  // namespace ic
