// One stage of a sweep: these variants trained to this global step, each as a train_and_eval
// run of the trainer with --export_best. Two ways to run it: a trainer process per variant, K
// at a time with the cores split between them (sweep_processes.cc); or, under mpirun, in the
// sweep's own processes, each group of them training its share of the variants data parallel
// (sweep_groups.cc). The schedules (sweep.cc) decide which variants and how far.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "train/sweep.h"
#include "train/sweep_config.h"

namespace ic {

// How a stage ended: every variant trained to its step; or some failed (named here when this
// process saw it, counted when another group's did); or a stop signal ended it (each run saved
// a checkpoint: the sweep resumes when run again).
struct StageEnd {
  std::vector<std::string> failures;
  int failed_elsewhere = 0;
  bool stopped = false;
};

// Records a variant that got to the stage's step, with the wall time it took.
using VariantDone = std::function<Status(const SweepVariant&, double wall_seconds)>;

// A variant's trainer output (its group's other processes under mpirun: train.rank-<r>.log).
constexpr const char* kTrainLog = "train.log";

std::string variant_dir(const std::string& sweep_dir, const SweepVariant& v);
// "--learning_rate=0.1 --depth_multiplier=0.5"
std::string flags_text(const std::vector<FlagSetting>& flags);

// The trainer's command line for one variant, trained to `steps` (below the budget: a rung of
// successive halving, stopped there with --stop_at_step so the schedule is the whole budget's),
// with `threads` compute threads unless the config sets --num_threads.
std::vector<std::string> variant_command(const SweepConfig& config, const SweepOptions& options,
                                         const SweepVariant& v, int threads, int64_t steps);

// Where a trainer's output (`name`: train.log, train.rank-<r>.log) goes while it runs: the
// variant's directory when the sweep's is local; when it is on an object store, which has no
// appends, a local staging file under $TMPDIR/inception-sweep/, which publish_log() adds to the
// variant's object when the run ends. The staging directory is made here.
Result<std::string> running_log_path(const SweepOptions& options, const SweepVariant& v,
                                     const std::string& name);
// After a run: on an object store, <variant>/<name> becomes its earlier contents followed by the
// staged file, which is then deleted (a file a killed sweep left is published by the next run).
// Nothing for a local sweep directory.
Status publish_log(const SweepOptions& options, const SweepVariant& v, const std::string& name);

// The global step of the newest checkpoint in a variant's directory (-1: none yet).
int64_t trained_step(const std::string& variant_dir);

// A trainer process per variant, options.parallel at a time, the cores split between them.
Result<StageEnd> train_stage_in_processes(const SweepConfig& config, const SweepOptions& options,
                                          const std::vector<const SweepVariant*>& variants,
                                          int64_t steps, const VariantDone& done,
                                          std::ostream& log);

// Under mpirun (options.world and options.group set): variant i is trained by group
// i % options.groups, in this process, over the group's communicator; every process of the job
// returns when every group is done, with the same StageEnd totals. `done` runs on each group's
// first process.
Result<StageEnd> train_stage_in_groups(const SweepConfig& config, const SweepOptions& options,
                                       const std::vector<const SweepVariant*>& variants,
                                       int64_t steps, const VariantDone& done, std::ostream& log);

// The stage's failures as the sweep's error (ok when there were none).
Status stage_failed(const StageEnd& end);

}  // namespace ic
