// The training recipe of each model from the run's flags: the
// network's options for training and evaluation, the optimizer, weight decay, EMA and
// learning-rate schedule, and the description checkpoints carry.
#pragma once

#include "models/model.h"
#include "train/model_state.h"
#include "train/run_options.h"
#include "train/trainer.h"

namespace ic {

// The graph's batch: the global batch over the replicas, and for training over the
// micro-batches each process runs a step in.
Result<ModelOptions> model_options_for(const RunOptions& options, bool training, int replica_count);
// How the graphs hold their activations on `backend` (ModelOptions::activations):
// --precision=bfloat16 keeps them in bf16 where the backend takes bf16 activations and computes
// in bf16 (Backend::has_native_bf16); elsewhere bf16 computes in f32 and f32 activations cost
// no conversions, so they stay f32.
DType activations_for(Precision precision, const Backend& backend);
// How many micro-batches of --micro_batch_size make one process's share of a training step
// (1 without the flag); an error when they do not divide it evenly.
Result<int> micro_batches_for(const RunOptions& options, int replica_count);
Result<TrainRecipe> train_recipe_for(const RunOptions& options);
CheckpointMeta checkpoint_meta_for(const RunOptions& options);

}  // namespace ic
