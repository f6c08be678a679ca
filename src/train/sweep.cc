#include "train/sweep.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>

#include "io/checkpoint_dir.h"
#include "io/export_versions.h"
#include "io/file_system.h"
#include "io/json.h"
#include "train/sweep_halving.h"
#include "train/sweep_hparams.h"
#include "train/sweep_stage.h"

namespace ic {
namespace {

constexpr const char* kResultFile = "result.json";
constexpr const char* kWinnerRecord = "assets.extra/sweep_winner.json";

// The last "examples/sec: X" of a trainer's log (0 when there is none).
double last_examples_per_sec(const std::string& log_path) {
  Result<std::string> tail = read_file_tail(log_path, 1 << 16);
  if (!tail.ok()) return 0;
  std::istringstream in(*tail);
  double last = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("examples/sec: ");
    if (at != std::string::npos) last = std::atof(line.c_str() + at + 14);
  }
  return last;
}

std::string sweep_number(double v) {
  std::ostringstream out;
  out << std::setprecision(6) << v;
  return out.str();
}

// What a variant's stage file says: result.json when it is finished (trained to the budget,
// or dropped by successive halving), rung-<S>.json when it has trained to rung S.
struct StageRecord {
  int64_t train_steps = 0;
  double wall_seconds = 0, examples_per_sec = 0;
  std::optional<double> best;  // rungs only: its best score then (none: it had no best export)
};

std::string rung_file(int64_t steps) { return "rung-" + std::to_string(steps) + ".json"; }

std::optional<StageRecord> read_stage(const std::string& dir, const std::string& file) {
  Result<std::string> text = read_file_to_string(join_path(dir, file), 1 << 16);
  if (!text.ok()) return std::nullopt;
  Result<JsonValue> json = parse_json(*text);
  if (!json.ok() || json->kind != JsonValue::Kind::object) return std::nullopt;
  StageRecord r;
  const auto number = [&](const char* key) -> const JsonValue* {
    const JsonValue* v = json->find(key);
    return v != nullptr && v->kind == JsonValue::Kind::number ? v : nullptr;
  };
  if (const JsonValue* s = number("train_steps")) r.train_steps = s->as_int64().value_or(0);
  if (const JsonValue* w = number("wall_seconds")) r.wall_seconds = std::atof(w->text.c_str());
  if (const JsonValue* e = number("examples_per_sec"))
    r.examples_per_sec = std::atof(e->text.c_str());
  if (const JsonValue* b = number("best")) r.best = std::strtod(b->text.c_str(), nullptr);
  return r;
}

Status write_stage(const std::string& dir, const std::string& file, const StageRecord& r) {
  std::string text = "{\"train_steps\": " + std::to_string(r.train_steps) +
                     ", \"wall_seconds\": " + sweep_number(r.wall_seconds) +
                     ", \"examples_per_sec\": " + sweep_number(r.examples_per_sec);
  if (r.best) text += ", \"best\": " + json_number(*r.best);
  return write_file_atomically(join_path(dir, file), {text + "}\n"});
}

// The wall time a variant spent on the rungs before `steps`.
double earlier_rungs_wall(const std::string& dir, const std::vector<int64_t>& rungs,
                          int64_t steps) {
  double wall = 0;
  for (int64_t r : rungs) {
    if (r >= steps) break;
    if (std::optional<StageRecord> rec = read_stage(dir, rung_file(r))) wall += rec->wall_seconds;
  }
  return wall;
}

// Every process of an mpirun job waits here for the others; nothing without one.
void wait_for_every_process(const SweepOptions& options) {
  if (options.world == nullptr) return;
  double nothing = 0;
  options.world->all_reduce_sum(&nothing, 1);
}

// The process that writes what concerns the whole sweep: the only one, or mpirun's first.
bool sweep_leader(const SweepOptions& options) {
  return options.world == nullptr || options.world->rank() == 0;
}

// Where the schedule's own messages go: `log` in the sweep's leader; nowhere in the other
// processes of an mpirun job (each group's first process still says what its group trains).
std::ostream& schedule_log(const SweepOptions& options, std::ostream& log) {
  static std::ostream nowhere(nullptr);
  return sweep_leader(options) ? log : nowhere;
}

// Trains `variants` to `steps` in trainer processes, or under mpirun in the groups, each one a
// session of TensorBoard's HParams dashboard from its first stage on. Every process has read
// the sweep's files (which variants are where) before any trains.
Result<StageEnd> train_stage(const SweepConfig& config, const SweepOptions& options,
                             const std::vector<const SweepVariant*>& variants, int64_t steps,
                             const VariantDone& done, std::ostream& log) {
  if (sweep_leader(options)) {
    for (const SweepVariant* v : variants) {
      IC_RETURN_IF_ERROR(make_dirs(variant_dir(options.sweep_dir, *v)));
      IC_RETURN_IF_ERROR(write_hparams_session_start(config, *v, options.sweep_dir));
    }
  }
  if (options.world == nullptr)
    return train_stage_in_processes(config, options, variants, steps, done, log);
  wait_for_every_process(options);
  return train_stage_in_groups(config, options, variants, steps, done, log);
}

// A variant is finished (trained to the budget, or dropped by successive halving): its
// result.json, and the end of its HParams session.
Status finish_variant(const SweepOptions& options, const SweepVariant& v,
                      const StageRecord& record) {
  IC_RETURN_IF_ERROR(write_stage(variant_dir(options.sweep_dir, v), kResultFile, record));
  return write_hparams_session_end(v, options.sweep_dir);
}

// Every variant trains to the budget; result.json marks each one finished.
Status run_full(const SweepConfig& config, const SweepOptions& options, std::ostream& log) {
  std::vector<const SweepVariant*> to_run;
  for (size_t i = 0; i < config.variants.size(); ++i) {
    if (options.variant_index >= 0 && static_cast<int64_t>(i) != options.variant_index) continue;
    const SweepVariant& v = config.variants[i];
    if (read_stage(variant_dir(options.sweep_dir, v), kResultFile)) {
      schedule_log(options, log) << "sweep: " << v.name << " is finished already" << std::endl;
      continue;
    }
    to_run.push_back(&v);
  }
  const auto finished = [&](const SweepVariant& v, double wall) {
    const std::string dir = variant_dir(options.sweep_dir, v);
    log << "sweep: " << v.name << " finished in " << sweep_number(wall) << " s" << std::endl;
    return finish_variant(
        options, v,
        StageRecord{
            config.train_steps, wall, last_examples_per_sec(join_path(dir, kTrainLog)), {}});
  };
  IC_ASSIGN_OR_RETURN(StageEnd end,
                      train_stage(config, options, to_run, config.train_steps, finished, log));
  return stage_failed(end);
}

// Successive halving. Which variants enter each rung follows from the rung files alone (each
// holds the variant's score when it got there), so a sweep run again after a kill makes the
// same choices without retraining what had reached its rung.
Status run_halving(const SweepConfig& config, const SweepOptions& options, std::ostream& log) {
  const std::vector<int64_t> rungs = halving_rungs(config.variants.size(), config.eta,
                                                   config.train_steps, config.first_rung_steps);
  const ExportBestMode mode = resolved_mode(config.metric, config.mode);
  std::vector<const SweepVariant*> entering;
  for (const SweepVariant& v : config.variants) entering.push_back(&v);
  for (size_t r = 0; r < rungs.size(); ++r) {
    const int64_t steps = rungs[r];
    const bool last = r + 1 == rungs.size();
    const std::string file = last ? kResultFile : rung_file(steps);
    std::vector<const SweepVariant*> to_run;
    for (const SweepVariant* v : entering) {
      if (!read_stage(variant_dir(options.sweep_dir, *v), file)) to_run.push_back(v);
    }
    schedule_log(options, log) << "sweep: rung " << r + 1 << " of " << rungs.size() << ": "
                               << entering.size() << " variant(s) to step " << steps << " ("
                               << entering.size() - to_run.size() << " there already)" << std::endl;
    const auto reached = [&](const SweepVariant& v, double wall) -> Status {
      const std::string dir = variant_dir(options.sweep_dir, v);
      StageRecord record{steps, wall, last_examples_per_sec(join_path(dir, kTrainLog)), {}};
      if (last) {  // result.json: the wall time of all its rungs
        record.wall_seconds += earlier_rungs_wall(dir, rungs, steps);
        log << "sweep: " << v.name << " finished in " << sweep_number(record.wall_seconds) << " s"
            << std::endl;
        return finish_variant(options, v, record);
      }
      std::ostringstream why;
      IC_ASSIGN_OR_RETURN(BestExports exports,
                          read_best_exports(join_path(dir, "export"), config.metric, mode, why));
      if (exports.best) record.best = exports.best->second.value;
      return write_stage(dir, rung_file(steps), record);
    };
    IC_ASSIGN_OR_RETURN(StageEnd end, train_stage(config, options, to_run, steps, reached, log));
    IC_RETURN_IF_ERROR(stage_failed(end));
    if (end.stopped || last) return Status();

    std::vector<std::optional<double>> scores;
    for (const SweepVariant* v : entering) {
      const std::string dir = variant_dir(options.sweep_dir, *v);
      const std::optional<StageRecord> at_rung = read_stage(dir, rung_file(steps));
      if (!at_rung)
        return data_loss(join_path(dir, rung_file(steps)),
                         " is missing or not a rung record: delete the variant's directory to "
                         "train it again");
      scores.push_back(at_rung->best);
    }
    const std::vector<size_t> kept =
        halving_survivors(scores, mode, halving_keep(entering.size(), config.eta));
    std::vector<const SweepVariant*> next;
    std::string kept_names, dropped_names;
    for (size_t i : kept) {
      next.push_back(entering[i]);
      kept_names += (kept_names.empty() ? "" : ", ") + entering[i]->name;
    }
    for (size_t i = 0; i < entering.size(); ++i) {
      if (std::find(kept.begin(), kept.end(), i) != kept.end()) continue;
      const SweepVariant& v = *entering[i];
      dropped_names += (dropped_names.empty() ? "" : ", ") + v.name;
      if (!sweep_leader(options)) continue;
      const std::string dir = variant_dir(options.sweep_dir, v);
      const StageRecord at_rung = read_stage(dir, rung_file(steps)).value_or(StageRecord{});
      IC_RETURN_IF_ERROR(
          finish_variant(options, v,
                         StageRecord{steps,
                                     earlier_rungs_wall(dir, rungs, steps) + at_rung.wall_seconds,
                                     at_rung.examples_per_sec,
                                     {}}));
    }
    schedule_log(options, log) << "sweep: after step " << steps << " by "
                               << choice_name(config.metric) << ": continuing " << kept_names
                               << "; dropped " << dropped_names << std::endl;
    entering = std::move(next);
  }
  return Status();
}

}  // namespace

Status run_sweep(const SweepConfig& config, const SweepOptions& options, std::ostream& log) {
  IC_RETURN_IF_ERROR(make_dirs(options.sweep_dir));
  if (options.variant_index >= static_cast<int64_t>(config.variants.size()))
    return invalid_argument("--variant_index=", options.variant_index, ": the config has ",
                            config.variants.size(), " variants (0 to ", config.variants.size() - 1,
                            ")");
  if (sweep_leader(options))
    IC_RETURN_IF_ERROR(write_hparams_experiment(config, options.sweep_dir));
  if (config.schedule == SweepSchedule::full) return run_full(config, options, log);
  if (options.variant_index >= 0)
    return invalid_argument("--variant_index=", options.variant_index,
                            ": successive halving chooses the variants of each rung from all "
                            "of the previous rung's scores, so it runs as one sweep, not one "
                            "variant per task");
  return run_halving(config, options, log);
}

Result<std::vector<LeaderboardRow>> read_leaderboard(const SweepConfig& config,
                                                     const std::string& sweep_dir) {
  std::vector<LeaderboardRow> rows;
  const ExportBestMode mode = resolved_mode(config.metric, config.mode);
  for (const SweepVariant& v : config.variants) {
    const std::string dir = variant_dir(sweep_dir, v);
    std::optional<StageRecord> finished = read_stage(dir, kResultFile);
    if (!finished) continue;
    std::ostringstream why;
    IC_ASSIGN_OR_RETURN(BestExports exports,
                        read_best_exports(join_path(dir, "export"), config.metric, mode, why));
    if (!exports.best)
      return data_loss(v.name, " is finished but ", join_path(dir, "export"),
                       " holds no best export: ", why.str());
    rows.push_back(
        LeaderboardRow{v.name, flags_text(v.flags), exports.best->second, exports.best->first,
                       finished->train_steps > 0 ? finished->train_steps : config.train_steps,
                       finished->wall_seconds, finished->examples_per_sec});
  }
  // A variant successive halving trained further ranks above one it dropped earlier.
  std::stable_sort(rows.begin(), rows.end(),
                   [mode](const LeaderboardRow& a, const LeaderboardRow& b) {
                     if (a.train_steps != b.train_steps) return a.train_steps > b.train_steps;
                     if (a.best.value != b.best.value)
                       return mode == ExportBestMode::min ? a.best.value < b.best.value
                                                          : a.best.value > b.best.value;
                     return a.variant < b.variant;
                   });
  return rows;
}

std::string leaderboard_csv(const SweepConfig& config, const std::vector<LeaderboardRow>& rows) {
  std::string csv =
      "rank,variant,flags,metric,best,step,train_steps,wall_seconds,examples_per_sec\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const LeaderboardRow& r = rows[i];
    csv += std::to_string(i + 1) + "," + r.variant + ",\"" + r.flags + "\"," +
           choice_name(config.metric) + "," + json_number(r.best.value) + "," +
           std::to_string(r.best.global_step) + "," + std::to_string(r.train_steps) + "," +
           sweep_number(r.wall_seconds) + "," + sweep_number(r.examples_per_sec) + "\n";
  }
  return csv;
}

Result<std::string> export_winner(const std::string& sweep_dir, const LeaderboardRow& winner,
                                  const std::optional<WinnerConversion>& conversion) {
  const std::string serving = join_path(sweep_dir, "serving");
  IC_RETURN_IF_ERROR(make_dirs(serving));
  IC_ASSIGN_OR_RETURN(auto versions, export_version_dirs(serving));  // highest first
  const int64_t newest = versions.empty() ? -1 : versions.front().first;
  // A copy's record names no format: the records of sweeps from before --export_format.
  const std::string record =
      "{\"variant\": " + json_quote(winner.variant) +
      ", \"source\": " + json_quote(winner.best_export) +
      (conversion ? ", \"format\": " + json_quote(conversion->format) : std::string()) + "}\n";
  if (!versions.empty()) {
    const std::string& there = versions.front().second;
    Result<std::string> was = read_file_to_string(join_path(there, kWinnerRecord), 1 << 16);
    if (was.ok() && *was == record) return there;  // the winner already serves
  }
  if (conversion) return conversion->write(winner.best_export, serving, {{kWinnerRecord, record}});
  const int64_t version =
      std::max(newest + 1, export_version_number(base_name(winner.best_export)).value_or(0));
  return copy_export_version(winner.best_export, serving, version, {{kWinnerRecord, record}});
}

}  // namespace ic
