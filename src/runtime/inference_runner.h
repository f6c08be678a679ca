// A trained model made ready to answer on one backend: the inference graph
// (graph/inference_graph.h: batch norm folded into the convolutions, ReLUs fused, forward-only
// kernels, timed convolution plans) compiled once per batch size, over ONE upload of its
// values that every batch size shares. classify and serve run their batches through it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/compiled_graph.h"
#include "graph/inference_graph.h"
#include "runtime/inference_model.h"

namespace ic {

class InferenceRunner {
 public:
  // Compiles `model` for each of `batch_sizes` (each 1 or more). Errors name the checkpoint.
  static Result<std::unique_ptr<InferenceRunner>> create(Backend& backend,
                                                         const InferenceModel& model,
                                                         const std::vector<int64_t>& batch_sizes,
                                                         const InferenceGraphOptions& options = {});

  // The compiled batch sizes, ascending.
  std::vector<int64_t> batch_sizes() const;
  int64_t image_floats() const { return image_floats_; }  // H * W * 3 of one image
  int64_t num_classes() const { return num_classes_; }
  // What the inference passes did (the graphs of every batch size are made alike).
  const InferencePassStats& pass_stats() const { return pass_stats_; }

  // Runs `batch_size` (one of batch_sizes()) preprocessed images [batch_size, H, W, 3] and
  // writes their logits [batch_size, num_classes]. One caller at a time.
  void run(int64_t batch_size, const float* images, float* logits);

 private:
  explicit InferenceRunner(Backend& backend) : backend_(backend) {}
  struct Compiled {
    int64_t batch_size = 0;
    Graph graph;  // the inference graph the kernels were compiled from
    std::unique_ptr<CompiledGraph> compiled;
  };
  Backend& backend_;
  DeviceParams params_;
  std::vector<Compiled> graphs_;  // ascending batch size
  int64_t image_floats_ = 0, num_classes_ = 0;
  InferencePassStats pass_stats_;
};

}  // namespace ic
