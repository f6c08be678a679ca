// One loaded checkpoint, ready to answer: its own backend, the model's values uploaded once, and
// one compiled inference graph per batch-size bucket (1, 2, 4, ..., max), so a batch
// of any size up to the maximum runs on a graph compiled at load time with its memory planned:
// nothing is allocated per request. A batch is padded up to its bucket.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/graph.h"
#include "runtime/inference_model.h"
#include "runtime/inference_runner.h"
#include "runtime/precision.h"
#include "serve/precision_choice.h"

namespace ic {

class ServedModel {
 public:
  // Loads `checkpoint` (empty: the newest of model_dir) with runtime/inference_model.h and compiles
  // the buckets in the precision `precision` resolves to (serve/precision_choice.h). Errors name
  // the checkpoint.
  static Result<std::unique_ptr<ServedModel>> load(
      const BackendOptions& backend_options, const std::string& model_dir,
      const std::string& checkpoint, int64_t max_batch_size,
      ServePrecision precision = ServePrecision::automatic);
  ~ServedModel();
  // Only load() makes one (the key is private).
  class Key {
    friend class ServedModel;
    Key() = default;
  };
  explicit ServedModel(Key) {}

  const std::string& checkpoint() const { return checkpoint_; }
  // The export's version directory number, else the checkpoint's global step.
  int64_t version() const { return version_; }
  const CheckpointMeta& meta() const { return meta_; }
  int64_t image_floats() const { return int64_t{meta_.height} * meta_.width * 3; }
  int64_t num_classes() const { return meta_.num_classes; }
  int64_t max_batch_size() const { return buckets_.back(); }
  // The precision the model computes in, and how it was chosen ("asked for", "auto: ...").
  InferencePrecision precision() const { return precision_; }
  const std::string& precision_reason() const { return precision_reason_; }
  // The buckets that run as slices of a smaller one (runtime/inference_runner.h), "" for none.
  std::string slices_summary() const { return runner_->slices_summary(); }

  // Runs `count` (1..max_batch_size) images, preprocessed [count, H, W, 3] in `images`, and
  // writes their logits [count, num_classes] to `logits`. One caller at a time.
  void run(const float* const* images, int64_t count, float* logits);

 private:
  std::string checkpoint_;
  int64_t version_ = 0;
  CheckpointMeta meta_;
  InferencePrecision precision_ = InferencePrecision::float32;
  std::string precision_reason_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<InferenceRunner> runner_;  // one compiled graph per bucket
  std::vector<int64_t> buckets_;
  std::vector<float> input_;          // [max_batch_size, H, W, 3]: a batch padded up to its bucket
  std::vector<float> padded_logits_;  // [max_batch_size, num_classes]
};

// 1, 2, 4, ... up to and including max_batch_size (which need not be a power of two).
std::vector<int64_t> batch_buckets(int64_t max_batch_size);

}  // namespace ic
