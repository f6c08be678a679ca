// A sweep stage as trainer processes: each variant's trainer started with posix_spawn, its
// output appended to the variant's train.log, K at a time.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "core/stop_signal.h"
#include "io/checkpoint_dir.h"
#include "io/file_system.h"
#include "train/sweep_stage.h"

extern char** environ;

namespace ic {
namespace {

using SweepClock = std::chrono::steady_clock;

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

struct SweepRun {
  const SweepVariant* variant;
  SweepClock::time_point started;
};

}  // namespace

Result<StageEnd> train_stage_in_processes(const SweepConfig& config, const SweepOptions& options,
                                          const std::vector<const SweepVariant*>& variants,
                                          int64_t steps, const VariantDone& done,
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
  while ((!end.stopped && next < variants.size()) || !running.empty()) {
    while (!end.stopped && next < variants.size() && static_cast<int>(running.size()) < parallel) {
      const SweepVariant& v = *variants[next++];
      const std::string dir = variant_dir(options.sweep_dir, v);
      IC_RETURN_IF_ERROR(make_dirs(dir));
      IC_ASSIGN_OR_RETURN(std::string log_path, running_log_path(options, v, kTrainLog));
      const std::vector<std::string> args = variant_command(config, options, v, threads, steps);
      Result<pid_t> pid = spawn_logged(args, log_path);
      if (!pid.ok()) return pid.status();
      log << "sweep: training " << v.name << " (" << flags_text(v.flags) << ", " << threads
          << " threads) to step " << steps << " in " << dir;
      if (log_path != join_path(dir, kTrainLog)) log << ", its output in " << log_path;
      log << std::endl;
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
    const int64_t step = trained_step(dir);
    if (Status published = publish_log(options, v, kTrainLog); !published.ok())
      log << "sweep: " << v.name << ": " << published.message() << std::endl;
    if (code != 0) {
      end.failures.push_back(v.name);
      log << "sweep: " << v.name << " failed (exit code " << code << "); its log is "
          << join_path(dir, kTrainLog) << std::endl;
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

}  // namespace ic
