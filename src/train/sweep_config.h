// The `sweep` program's config (docs/variants.md): which trainer, its base flags, the variants
// (a grid of flag values, a list of flag sets, or both), the metric they are ranked by and the
// training budget of each. Parsed from JSON, checked, and expanded into named variants.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "train/choices.h"

namespace ic {

// The key of "grid" and "variants" that picks a variant's model (SweepVariant::trainer).
constexpr const char* kSweepModelKey = "model";

// One flag as the trainer's command line spells it: --name=value.
using FlagSetting = std::pair<std::string, std::string>;

struct SweepVariant {
  std::string name;                // a directory name: "03_learning_rate=0.1_depth_multiplier=0.5"
  std::vector<FlagSetting> flags;  // what this variant sets beyond the base flags
  // The program that trains it: the config's "trainer", or the model the variant names with
  // "model" (kept in `flags` for its name, the leaderboard and HParams; not passed on).
  std::string trainer;
};

// How the budget is spent: every variant trains to train_steps (full), or successive
// halving drops the worse variants at each rung (train/sweep_halving.h).
enum class SweepSchedule { full, halving };

struct SweepConfig {
  std::string trainer;            // a model of the registry, whose program is next to `sweep`
  std::vector<FlagSetting> base;  // "flags": every variant's flags
  std::vector<SweepVariant> variants;
  ExportBestMetric metric = ExportBestMetric::accuracy;
  ExportBestMode mode = ExportBestMode::auto_;
  int64_t train_steps = 0;  // "budget": {"train_steps": N}: each variant trains to this step
  SweepSchedule schedule = SweepSchedule::full;
  // Halving only ("budget": {"eta": 2, "first_rung_steps": M}): 1/eta of a rung's variants go
  // on to the next; the first rung's step (0: as many rungs as halvings take the variants to one).
  int eta = 2;
  int64_t first_rung_steps = 0;
};

// Parses `text` (the file `path`, named in every error). The config is a JSON object:
//   {"trainer": "inception_v3",
//    "flags": {"use_data": "fake", "train_batch_size": 8},
//    "grid": {"learning_rate": [0.1, 0.01], "depth_multiplier": [0.5, 1.0]},
//    "variants": [{"label_smoothing": 0.1}],
//    "metric": "accuracy", "mode": "auto",
//    "schedule": "full",
//    "budget": {"train_steps": 2000}}
// "grid" gives every combination of its values (in the order written, the last flag varying
// fastest), "variants" adds its flag sets after them; at least one of the two. Values are JSON
// numbers (kept as written), strings or booleans. "model" in "grid" or "variants" trains that
// variant with another model's trainer (each model of the registry has a program of its name), so
// one sweep can compare models. The flags the sweep sets itself (mode, model_dir, export_dir,
// export_best*, train_steps, stop_at_step) may not appear. "schedule": "halving" takes "eta" (an
// integer >= 2, default 2) and "first_rung_steps" (>= 1, below train_steps) in "budget" too.
// `models`: the names "trainer" and "model" may take, the model registry's (models/model.h's
// model_names(); passed in so that this parser needs no more than io/, for its fuzz harness).
Result<SweepConfig> parse_sweep_config(const std::string& text, const std::string& path,
                                       const std::vector<std::string>& models);

}  // namespace ic
