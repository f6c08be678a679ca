// A sweep stage under mpirun: the job's processes are split into groups (SweepOptions), and each
// group trains its share of the variants one after another, in the sweep's own processes, with
// the trainer's run_main() over the group's communicator: data parallel exactly as `mpirun -np
// <group size> <trainer>` would be, with no launcher of its own. Each run's output goes to the
// variant's train.log (the group's first process) or train.rank-<r>.log (the others).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "core/stop_signal.h"
#include "core/unique_fd.h"
#include "io/checkpoint_dir.h"
#include "io/file_system.h"
#include "train/run_main.h"
#include "train/sweep_stage.h"

namespace ic {
namespace {

// Standard output and error appended to a file for as long as it lives (the trainer writes to
// them), then put back.
class OutputToFile {
 public:
  explicit OutputToFile(const std::string& path) : saved_out_(::dup(1)), saved_err_(::dup(2)) {
    flush();
    UniqueFd file(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (file.get() < 0) return;  // the trainer's output goes where the sweep's does
    ::dup2(file.get(), 1);
    ::dup2(file.get(), 2);
  }
  ~OutputToFile() {
    flush();
    if (saved_out_.get() >= 0) ::dup2(saved_out_.get(), 1);
    if (saved_err_.get() >= 0) ::dup2(saved_err_.get(), 2);
  }
  OutputToFile(const OutputToFile&) = delete;
  OutputToFile& operator=(const OutputToFile&) = delete;

 private:
  static void flush() {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(stdout);
    std::fflush(stderr);
  }
  UniqueFd saved_out_, saved_err_;
};

// How one variant's run ended, as the group's first process saw it (the others follow it, so
// that every process of the group makes the same next move).
enum class RunEnd : int { reached = 0, stopped = 1, failed = 2 };

// Runs the trainer in this process on `args` (args[0]: the trainer's name).
int run_trainer_here(const SweepVariant& v, const SweepOptions& options,
                     std::vector<std::string> args, const std::string& log_path) {
  args[0] = v.trainer;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  OutputToFile output(log_path);
  return run_main(v.trainer, static_cast<int>(args.size()), argv.data(), options.exporter,
                  options.group);
}

}  // namespace

Result<StageEnd> train_stage_in_groups(const SweepConfig& config, const SweepOptions& options,
                                       const std::vector<const SweepVariant*>& variants,
                                       int64_t steps, const VariantDone& done, std::ostream& log) {
  Communicator& group = *options.group;
  const bool first = group.rank() == 0;
  int local_processes = 1;
  local_process_index(&local_processes);
  const int cores = options.cores > 0
                        ? options.cores
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int threads = std::max(1, cores / local_processes);
  StageEnd end;
  for (size_t i = options.group_index; i < variants.size();
       i += static_cast<size_t>(options.groups)) {
    // A stop signal reaches each process on its own: the group agrees before it starts a run.
    double stop = stop_requested() ? 1 : 0;
    group.all_reduce_sum(&stop, 1);
    if (stop > 0) {
      end.stopped = true;
      break;
    }
    const SweepVariant& v = *variants[i];
    const std::string dir = variant_dir(options.sweep_dir, v);
    // Every process makes the directory (the first may not have got there yet). A process that
    // cannot still runs the trainer, whose output then goes where the sweep's does: the group's
    // other processes are waiting for it there, and the trainer says what is wrong.
    (void)make_dirs(dir);
    const std::string log_name =
        first ? std::string(kTrainLog) : "train.rank-" + std::to_string(group.rank()) + ".log";
    Result<std::string> log_path = running_log_path(options, v, log_name);
    if (!log_path.ok()) std::cerr << "sweep: " << log_path.status().message() << std::endl;
    if (first) {
      log << "sweep: group " << options.group_index << " (" << group.size()
          << " processes) training " << v.name << " (" << flags_text(v.flags) << ", " << threads
          << " threads) to step " << steps << " in " << dir << std::endl;
    }
    const auto started = std::chrono::steady_clock::now();
    const int code =
        run_trainer_here(v, options, variant_command(config, options, v, threads, steps),
                         log_path.ok() ? *log_path : "");
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (Status published = publish_log(options, v, log_name); !published.ok())
      std::cerr << "sweep: " << v.name << ": " << published.message() << std::endl;
    RunEnd how = RunEnd::reached;
    if (first) {
      const int64_t step = trained_step(dir);
      if (code != 0) {
        how = RunEnd::failed;
        log << "sweep: " << v.name << " failed (exit code " << code << "); its log is "
            << join_path(dir, log_name) << std::endl;
      } else if (step < steps) {
        how = RunEnd::stopped;
        log << "sweep: " << v.name << " stopped at step " << step << " of " << steps
            << "; run the sweep again to resume it" << std::endl;
      } else if (Status recorded = done(v, wall); !recorded.ok()) {
        how = RunEnd::failed;
        log << "sweep: " << v.name << ": " << recorded.message() << std::endl;
      }
    }
    group.broadcast(&how, sizeof how, 0);
    if (how == RunEnd::failed && first) end.failures.push_back(v.name);
    if (how == RunEnd::stopped) {
      end.stopped = true;
      break;
    }
  }
  // Every group is done: the totals, the same in every process.
  double totals[2] = {static_cast<double>(end.failures.size()), end.stopped && first ? 1.0 : 0.0};
  options.world->all_reduce_sum(totals, 2);
  end.failed_elsewhere = static_cast<int>(totals[0]) - static_cast<int>(end.failures.size());
  end.stopped = totals[1] > 0;
  return end;
}

}  // namespace ic
