// One evaluation pass over a compiled inference graph: forward, then the metrics
// (runtime/metrics.h) and the loss over labelled batches, or only the logits (classify, serve).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/compiled_graph.h"
#include "graph/graph.h"
#include "runtime/metrics.h"
#include "runtime/model_variables.h"

namespace ic {

class Evaluator {
 public:
  // `graph` is an inference graph with losses (training = false); it reads
  // state.eval_binding() (the EMA shadows when kept).
  static Result<std::unique_ptr<Evaluator>> create(ModelVariables& state, const Graph& graph,
                                                   float weight_decay);

  // Clears the counts and computes the weight-decay term of the current eval weights.
  void begin();
  // One batch; labels < 0 mark padding rows, which are not counted. labels may be null for a
  // graph without losses: then only logits() is produced.
  void run_batch(const float* images, const int32_t* labels);
  const TopKCounts& counts() const { return counts_; }
  int64_t batch_size() const { return batch_size_; }
  // The logits of the last batch [N, num_classes], on the host.
  const std::vector<float>& logits() const { return logits_; }

 private:
  Evaluator(ModelVariables& state) : state_(state) {}
  ModelVariables& state_;
  std::unique_ptr<CompiledGraph> graph_;
  DeviceBuffer scratch_;  // [0]: sum of squares (begin), [1..]: copies of the loss terms
  float weight_decay_ = 0, decay_loss_ = 0;
  int64_t batch_size_ = 0, image_floats_ = 0, num_classes_ = 0;
  std::vector<float> logits_;
  std::vector<const float*> loss_terms_;  // fixed when the graph is compiled
  std::vector<float> loss_host_;          // scratch_ downloaded by run_batch
  TopKCounts counts_;
};

// Copies the graph's loss terms to `to` on the device, so that one download reads them all
// (the trainer's step and the evaluator both do this).
void stage_loss_terms(Backend& backend, const std::vector<const float*>& terms, float* to);

}  // namespace ic
