#include "train/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>
#include <thread>

#include "core/stop_signal.h"
#include "io/checkpoint_dir.h"
#include "io/export_versions.h"
#include "io/file_system.h"
#include "io/json.h"
#include "train/sweep_halving.h"

extern char** environ;

namespace ic {
namespace {

namespace fs = std::filesystem;
using SweepClock = std::chrono::steady_clock;

constexpr const char* kResultFile = "result.json";
constexpr const char* kWinnerRecord = "assets.extra/sweep_winner.json";

std::string variant_dir(const std::string& sweep_dir, const SweepVariant& v) {
  return join_path(sweep_dir, v.name);
}

bool has_flag(const std::vector<FlagSetting>& flags, const std::string& name) {
  return std::any_of(flags.begin(), flags.end(),
                     [&](const FlagSetting& f) { return f.first == name; });
}

std::string flags_text(const std::vector<FlagSetting>& flags) {
  std::string text;
  for (const auto& [name, value] : flags)
    text += (text.empty() ? "--" : " --") + name + "=" + value;
  return text;
}

// The trainer's command line for one variant, trained to `steps` (below the budget: a rung of
// successive halving, stopped there with --stop_at_step so the schedule is the whole budget's).
std::vector<std::string> variant_command(const SweepConfig& config, const SweepOptions& options,
                                         const SweepVariant& v, int threads, int64_t steps) {
  const std::string dir = variant_dir(options.sweep_dir, v);
  std::vector<std::string> args = {join_path(options.bin_dir, config.trainer)};
  for (const auto& [name, value] : config.base) args.push_back("--" + name + "=" + value);
  for (const auto& [name, value] : v.flags) args.push_back("--" + name + "=" + value);
  if (!has_flag(config.base, "num_threads") && !has_flag(v.flags, "num_threads"))
    args.push_back("--num_threads=" + std::to_string(threads));
  args.push_back("--mode=train_and_eval");
  args.push_back("--train_steps=" + std::to_string(config.train_steps));
  if (steps < config.train_steps) args.push_back("--stop_at_step=" + std::to_string(steps));
  args.push_back("--model_dir=" + join_path(dir, "model"));
  args.push_back("--export_dir=" + join_path(dir, "export"));
  args.push_back(std::string("--export_best=") + choice_name(config.metric));
  args.push_back(std::string("--export_best_mode=") + choice_name(config.mode));
  args.push_back("--exports_to_keep=1");
  return args;
}

// Starts `args` with stdout and stderr appended to `log_path`.
Result<pid_t> spawn_logged(const std::vector<std::string>& args, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int failed = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (failed != 0) return error("cannot start ", args[0], ": ", std::strerror(failed));
  return pid;
}

// The last "examples/sec: X" of a trainer's log (0 when there is none).
double last_examples_per_sec(const std::string& log_path) {
  std::ifstream in(log_path);
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

struct SweepRun {
  const SweepVariant* variant;
  SweepClock::time_point started;
};

// How a stage of training ended: every variant trained to its step, or some failed (named),
// or a stop signal ended it (each run saved a checkpoint; the sweep resumes when run again).
struct StageEnd {
  std::vector<std::string> failures;
  bool stopped = false;
};

// Trains `variants` to global step `steps`, options.parallel at a time with the cores split
// between them; `done(variant, wall seconds)` records each one that got there.
Result<StageEnd> train_stage(const SweepConfig& config, const SweepOptions& options,
                             const std::vector<const SweepVariant*>& variants, int64_t steps,
                             const std::function<Status(const SweepVariant&, double)>& done,
                             std::ostream& log) {
  const int cores = options.cores > 0
                        ? options.cores
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int parallel =
      std::max(1, std::min<int>(options.parallel, static_cast<int>(variants.size())));
  const int threads = std::max(1, cores / parallel);
  std::map<pid_t, SweepRun> running;
  StageEnd end;
  size_t next = 0;
  std::error_code ec;
  while ((!end.stopped && next < variants.size()) || !running.empty()) {
    while (!end.stopped && next < variants.size() && static_cast<int>(running.size()) < parallel) {
      const SweepVariant& v = *variants[next++];
      const std::string dir = variant_dir(options.sweep_dir, v);
      fs::create_directories(dir, ec);
      if (ec) return error("cannot create ", dir, ": ", ec.message());
      const std::vector<std::string> args = variant_command(config, options, v, threads, steps);
      Result<pid_t> pid = spawn_logged(args, join_path(dir, "train.log"));
      if (!pid.ok()) return pid.status();
      log << "sweep: training " << v.name << " (" << flags_text(v.flags) << ", " << threads
          << " threads) to step " << steps << " in " << dir << std::endl;
      running[*pid] = SweepRun{&v, SweepClock::now()};
    }
    int status = 0;
    const pid_t exited = waitpid(-1, &status, WNOHANG);
    if (exited <= 0) {
      if (!end.stopped && stop_requested()) {
        end.stopped = true;
        acknowledge_stop();
        log << "sweep: stop requested: each run saves a checkpoint and stops; run the sweep "
               "again to resume"
            << std::endl;
        for (const auto& r : running) kill(r.first, SIGTERM);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    auto it = running.find(exited);
    if (it == running.end()) continue;
    const SweepVariant& v = *it->second.variant;
    const double wall =
        std::chrono::duration<double>(SweepClock::now() - it->second.started).count();
    running.erase(it);
    const std::string dir = variant_dir(options.sweep_dir, v);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    Result<std::optional<std::string>> latest = latest_checkpoint(join_path(dir, "model"));
    const int64_t step =
        latest.ok() && latest->has_value() ? checkpoint_step(**latest).value_or(-1) : -1;
    if (code != 0) {
      end.failures.push_back(v.name);
      log << "sweep: " << v.name << " failed (exit code " << code << "); its log is "
          << join_path(dir, "train.log") << std::endl;
      continue;
    }
    if (step < steps) {
      end.stopped = true;
      log << "sweep: " << v.name << " stopped at step " << step << " of " << steps
          << "; run the sweep again to resume it" << std::endl;
      continue;
    }
    IC_RETURN_IF_ERROR(done(v, wall));
  }
  return end;
}

Status stage_failed(const StageEnd& end) {
  if (end.failures.empty()) return Status();
  std::string names;
  for (const std::string& n : end.failures) names += (names.empty() ? "" : ", ") + n;
  return error("sweep: ", end.failures.size(), " variant(s) failed: ", names,
               " (each one's train.log says why)");
}

// Every variant trains to the budget; result.json marks each one finished.
Status run_full(const SweepConfig& config, const SweepOptions& options, std::ostream& log) {
  std::vector<const SweepVariant*> to_run;
  for (size_t i = 0; i < config.variants.size(); ++i) {
    if (options.variant_index >= 0 && static_cast<int64_t>(i) != options.variant_index) continue;
    const SweepVariant& v = config.variants[i];
    if (read_stage(variant_dir(options.sweep_dir, v), kResultFile)) {
      log << "sweep: " << v.name << " is finished already" << std::endl;
      continue;
    }
    to_run.push_back(&v);
  }
  const auto finished = [&](const SweepVariant& v, double wall) {
    const std::string dir = variant_dir(options.sweep_dir, v);
    log << "sweep: " << v.name << " finished in " << sweep_number(wall) << " s" << std::endl;
    return write_stage(
        dir, kResultFile,
        StageRecord{
            config.train_steps, wall, last_examples_per_sec(join_path(dir, "train.log")), {}});
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
    log << "sweep: rung " << r + 1 << " of " << rungs.size() << ": " << entering.size()
        << " variant(s) to step " << steps << " (" << entering.size() - to_run.size()
        << " there already)" << std::endl;
    const auto reached = [&](const SweepVariant& v, double wall) -> Status {
      const std::string dir = variant_dir(options.sweep_dir, v);
      StageRecord record{steps, wall, last_examples_per_sec(join_path(dir, "train.log")), {}};
      if (last) {  // result.json: the wall time of all its rungs
        record.wall_seconds += earlier_rungs_wall(dir, rungs, steps);
        log << "sweep: " << v.name << " finished in " << sweep_number(record.wall_seconds) << " s"
            << std::endl;
        return write_stage(dir, kResultFile, record);
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
    for (const SweepVariant* v : entering)
      scores.push_back(read_stage(variant_dir(options.sweep_dir, *v), rung_file(steps))->best);
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
      const std::string dir = variant_dir(options.sweep_dir, v);
      const std::optional<StageRecord> at_rung = read_stage(dir, rung_file(steps));
      IC_RETURN_IF_ERROR(
          write_stage(dir, kResultFile,
                      StageRecord{steps,
                                  earlier_rungs_wall(dir, rungs, steps) + at_rung->wall_seconds,
                                  at_rung->examples_per_sec,
                                  {}}));
    }
    log << "sweep: after step " << steps << " by " << choice_name(config.metric) << ": continuing "
        << kept_names << "; dropped " << dropped_names << std::endl;
    entering = std::move(next);
  }
  return Status();
}

}  // namespace

Status run_sweep(const SweepConfig& config, const SweepOptions& options, std::ostream& log) {
  if (!local_path(options.sweep_dir))
    return invalid_argument("--sweep_dir must be a local directory: ", options.sweep_dir);
  std::error_code ec;
  fs::create_directories(options.sweep_dir, ec);
  if (ec) return error("cannot create ", options.sweep_dir, ": ", ec.message());
  if (options.variant_index >= static_cast<int64_t>(config.variants.size()))
    return invalid_argument("--variant_index=", options.variant_index, ": the config has ",
                            config.variants.size(), " variants (0 to ", config.variants.size() - 1,
                            ")");
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

Result<std::string> export_winner(const std::string& sweep_dir, const LeaderboardRow& winner) {
  const std::string serving = join_path(sweep_dir, "serving");
  std::error_code ec;
  fs::create_directories(serving, ec);
  if (ec) return error("cannot create ", serving, ": ", ec.message());
  IC_ASSIGN_OR_RETURN(auto versions, export_version_dirs(serving));  // highest first
  const int64_t newest = versions.empty() ? -1 : versions.front().first;
  const std::string record = "{\"variant\": " + json_quote(winner.variant) +
                             ", \"source\": " + json_quote(winner.best_export) + "}\n";
  if (!versions.empty()) {
    const std::string& there = versions.front().second;
    Result<std::string> was = read_file_to_string(join_path(there, kWinnerRecord), 1 << 16);
    if (was.ok() && *was == record) return there;  // the winner already serves
  }
  const int64_t version =
      std::max(newest + 1, export_version_number(base_name(winner.best_export)).value_or(0));
  const std::string temp = join_path(serving, "temp-" + std::to_string(version));
  const std::string final_dir = join_path(serving, std::to_string(version));
  fs::remove_all(temp, ec);
  fs::copy(winner.best_export, temp, fs::copy_options::recursive, ec);
  if (ec) return error("cannot copy ", winner.best_export, " to ", temp, ": ", ec.message());
  IC_RETURN_IF_ERROR(write_file_atomically(join_path(temp, kWinnerRecord), {record}));
  fs::rename(temp, final_dir, ec);
  if (ec) return error("cannot rename ", temp, " to ", final_dir, ": ", ec.message());
  return final_dir;
}

}  // namespace ic
