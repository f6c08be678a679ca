// The `sweep` program (docs/variants.md): every variant of a sweep config trained as its own
// train_and_eval run of the trainer, in <sweep_dir>/<variant>/ (model/, export/, train.log),
// K at a time with the cores split between them; each run exports its best checkpoint as it
// goes (--export_best), so its best score is in its export directory. A finished variant is
// marked by <variant>/result.json and never run again; an unfinished one resumes from its
// checkpoints when the sweep is run again. With "schedule": "halving" (successive halving,
// train/sweep_halving.h) the variants train in rungs and only the best 1/eta of each rung
// continue, from their checkpoints; a dropped variant is finished where it was dropped. At the end:
// <sweep_dir>/leaderboard.csv, the same table on the log, and the winner's best export copied to
// <sweep_dir>/serving/<N>/ for serve.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "dist/communicator.h"
#include "train/best_export.h"
#include "train/sweep_config.h"

namespace ic {

struct SweepOptions {
  std::string sweep_dir;
  std::string bin_dir;  // where the trainer programs are
  int parallel = 1;     // variants trained at once
  int cores = 0;        // split between them (0: this machine's)
  // Only this variant (a job array's task, Slurm's SLURM_ARRAY_TASK_ID); -1: all.
  int64_t variant_index = -1;
  // Under mpirun: the job's processes (world) split into `groups` groups of consecutive ranks;
  // this process is in group `group_index`, whose communicator is `group`. Each group trains
  // every groups-th variant in its own processes, data parallel over the group, through
  // run_main() and `exporter`. Null world: each variant is a trainer process of its own.
  Communicator* world = nullptr;
  Communicator* group = nullptr;
  int groups = 1, group_index = 0;
  CheckpointExporter exporter;
};

struct LeaderboardRow {
  std::string variant, flags;  // flags: "--learning_rate=0.1 --depth_multiplier=0.5"
  BestExportRecord best;
  std::string best_export;  // its directory
  int64_t train_steps = 0;  // how far it trained (successive halving drops variants early)
  double wall_seconds = 0, examples_per_sec = 0;
};

// Runs the variants that are not finished (only options.variant_index when >= 0). A stop
// signal forwards SIGTERM to the runs (each saves a checkpoint) and returns ok: running the
// sweep again resumes them. A run that fails is named with its log, the others go on, and
// the sweep's Status is an error at the end.
Status run_sweep(const SweepConfig& config, const SweepOptions& options, std::ostream& log);

// The finished variants, best first: those trained furthest, then by the metric (ties: by name).
Result<std::vector<LeaderboardRow>> read_leaderboard(const SweepConfig& config,
                                                     const std::string& sweep_dir);

// leaderboard.csv's text:
// rank,variant,flags,metric,best,step,train_steps,wall_seconds,examples_per_sec
// (best exactly: the shortest decimal that reads back as the same double).
std::string leaderboard_csv(const SweepConfig& config, const std::vector<LeaderboardRow>& rows);

// How the winner goes into serving/ in a format other than its best export's (a SavedModel):
// the format's name (for the winner's record) and how to write it: `best_export` read and
// written as a new version of `serving_dir`, with `extra_files` (paths in the version ->
// contents), returning the version's path. The programs pass infer/'s export.
struct WinnerConversion {
  std::string format;
  std::function<Result<std::string>(const std::string& best_export, const std::string& serving_dir,
                                    const std::map<std::string, std::string>& extra_files)>
      write;
};

// Puts `winner`'s best export into <sweep_dir>/serving/<N>/ unless the newest version there is
// already it: without a conversion, the best export copied as it is (a poller never sees half
// of it: io/export_versions.h); with one, written in its format. Each version records
// assets.extra/sweep_winner.json (variant, source export, and a conversion's format). Returns
// the version's path.
Result<std::string> export_winner(const std::string& sweep_dir, const LeaderboardRow& winner,
                                  const std::optional<WinnerConversion>& conversion = {});

}  // namespace ic
