// One training step and one evaluation pass over compiled graphs, llm.c style: the step is
// upload -> forward -> backward -> weight decay -> optimizer -> EMA, each a flat pass over
// the ModelState arenas.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dist/device_reducer.h"
#include "graph/compiled_graph.h"
#include "runtime/evaluator.h"
#include "train/lr_schedule.h"
#include "train/model_state.h"
#include "train/optimizer.h"

namespace ic {

// The reference's constants (inception_v3.py, resnet_main.py) plus the schedule.
struct TrainRecipe {
  // An entry of the optimizer table (train/optimizer.h), with its hyper-parameters.
  const Optimizer* optimizer = find_optimizer("RMS");
  bool nesterov = false;       // ResNet-50's momentum is Nesterov
  float weight_decay = 4e-5f;  // times sum(w^2)/2 over the decayed kernels
  // The optimizer's hyper-parameters as this run sets them (its entry's, in their order, with
  // --rmsprop_epsilon's value); empty: the entry's own.
  std::vector<Hyperparameter> hyperparameters;
  bool moving_average = true;
  float moving_average_decay = 0.995f;  // at most; TF's min(decay, (1 + step) / (10 + step))
  uint64_t seed = 0;                    // dropout masks
  // The step's batch is run as this many micro-batches of the graph's batch each, their
  // gradients averaged before one update: a large batch in the memory of a small one, as the
  // TPU's cores each take a share of the global batch (micro-batch k draws the dropout masks
  // replica k would). Batch norm normalises over each micro-batch, and its moving statistics
  // are updated once per micro-batch, in order.
  int micro_batches = 1;
  LrScheduleOptions schedule;
  // TF-slim's --trainable_scopes: only trainable variables whose names start with one of
  // these are updated (no optimizer step, no slot change, no weight-decay gradient for the
  // others); empty: all. Like TF-slim, the others still get their moving statistics and EMA
  // shadows updated, and their weight decay still counts in the reported loss.
  std::vector<std::string> trainable_scopes;
};

class Trainer {
 public:
  // `graph` must be a training graph whose parameters match `state`'s layout. With
  // a `reducer` (data parallel, one process per replica) each step averages the gradients over
  // the replicas before the update, so every replica applies the same update; the graph's batch
  // is then this replica's share of the global batch.
  static Result<std::unique_ptr<Trainer>> create(ModelState& state, const Graph& graph,
                                                 const TrainRecipe& recipe,
                                                 DeviceReducer* reducer = nullptr);

  // One step on a host batch: images [N,H,W,3] float32, labels [N] int32 (N = batch_size():
  // the graph's batch times the recipe's micro_batches). Advances state.global_step.
  // `want_loss` keeps this step's loss for loss().
  void step(const float* images, const int32_t* labels, bool want_loss);
  // The total loss of the last step run with want_loss (terms + weight decay), before the
  // update, as the reference reports it (with micro-batches, the mean of theirs); with
  // replicas, their mean (every replica must call it).
  float loss();
  double last_learning_rate() const { return last_learning_rate_; }
  int64_t batch_size() const { return batch_size_ * micro_batches_; }
  // One line for the run's log: the memory this training run will hold at its peak (the
  // process so far, the step's activation arena, the checkpoint's host copies, input batches)
  // and what the machine has available. Call after the model state is initialised.
  std::string memory_estimate() const;
  // One line for the run's log: how many variables and parameters the optimizer updates
  // (all, or those under the recipe's trainable_scopes).
  std::string trainable_summary() const;

 private:
  Trainer(ModelState& state) : state_(state) {}
  ModelState& state_;
  TrainRecipe recipe_;
  std::unique_ptr<CompiledGraph> graph_;
  DeviceReducer* reducer_ = nullptr;
  uint64_t dropout_seed_base_ = 0;  // the recipe's seed, mixed with the replica's rank
  DeviceBuffer grad_sum_;           // micro-batches: the sum of their gradients (else empty)
  // [0]: sum of squares, then the loss terms of each micro-batch, one after the other.
  DeviceBuffer scratch_;
  // Fixed when the graph is compiled; kept so a step asks the graph for nothing.
  std::vector<const float*> loss_terms_;
  std::vector<float> loss_host_;  // scratch_ downloaded by loss()
  int64_t batch_size_ = 0;        // the graph's: one micro-batch
  int64_t image_floats_ = 0;      // of one micro-batch
  int micro_batches_ = 1;
  double last_learning_rate_ = 0;
  // The trainable arena's ranges the optimizer updates: the whole arena, or the variables under
  // the trainable scopes, adjacent ones merged.
  std::vector<UpdateRange> update_ranges_;
  int64_t trained_variables_ = 0, trainable_variables_ = 0;
  int64_t trained_parameters_ = 0, trainable_parameters_ = 0;
};

}  // namespace ic
