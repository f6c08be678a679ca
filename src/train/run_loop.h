// The run modes of inception_v3 / inception_v4 / resnet50, less two quirks of
// the reference: train_and_eval counts absolute steps (a restarted run continues where it
// stopped) and evaluation uses the EMA weights of the checkpoint it evaluates.
//   train           train to --train_steps (absolute), resuming from the latest checkpoint
//   eval            follow --model_dir: evaluate each new checkpoint once, stop after the one
//                   at --train_steps or after --eval_timeout seconds without a new one
//   train_and_eval  cycles of --train_steps_per_eval steps, each followed by an evaluation
//   summary         the layer table and totals
// Every loop of --iterations steps logs "step = N, loss = X (T sec)", "global_step/sec: R"
// and "examples/sec: R"; summaries and checkpoints are decided at loop boundaries.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "dist/communicator.h"
#include "runtime/metrics.h"
#include "train/run_options.h"

namespace ic {

// Runs options.mode (options already validated). A stop signal (SIGINT/SIGTERM) ends the run
// with a checkpoint and an ok Status.
//
// With a `communicator` of more than one process (mpirun), training is data parallel: each process
// takes train_batch_size / processes images of its own input shard per step, the gradients are
// averaged, and replica 0 logs and writes checkpoints and events; evaluation splits the
// validation files over the replicas and sums their counts. --mode=eval is refused there.
//
// `on_evaluation`, when given, is called on replica 0 after each evaluation that scored (not
// one a stop signal cut short), with the checkpoint it evaluated; an error it returns ends the
// run with that error (--export_best, train/best_export.h).
struct EvaluationOutcome {
  std::string checkpoint;  // the checkpoint evaluated (its path prefix in --model_dir)
  int64_t step = 0;
  double accuracy = 0, accuracy_at_5 = 0, loss = 0;
};
using EvaluationListener = std::function<Status(const EvaluationOutcome&)>;

Status run_mode(const RunOptions& options, Backend& backend, std::ostream& log,
                Communicator* communicator = nullptr,
                const EvaluationListener& on_evaluation = nullptr);

// The replicas' eval counts added up (every replica gets the sum).
TopKCounts sum_over_replicas(const TopKCounts& counts, Communicator& comm);

// "accuracy = 0.5, accuracy@5 = 0.75, global_step = 100, loss = 2.5": Estimator's sorted
// "key = value" rendering of an eval result.
std::string format_eval_results(double accuracy, double accuracy_at_5, int64_t step, double loss);

}  // namespace ic
