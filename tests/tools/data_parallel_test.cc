// Data-parallel training with the real binaries: `mpirun -np 2 inception_v3` on small TFRecord
// shards made by make_fake_imagenet. One replica speaks (one log, one event file per folder, one
// set of checkpoints), the split evaluation gives what a single process evaluating the same
// checkpoint gives, a restart under mpirun resumes, --mode=eval is refused under mpirun, and
// SIGTERM to mpirun stops every replica with a checkpoint.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>

#include "io/checkpoint_dir.h"
#include "tools/background_test_util.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::Background;
using testing::latest_step;

using testing::run_command;
using testing::run_tool;
using testing::TempDir;
using testing::ToolOutput;

// Open MPI leaks at exit by design: LeakSanitizer (sanitizer builds) is off for its processes.
// `exec_mpirun`: the shell becomes mpirun, so that a signal to the child reaches mpirun.
std::string mpirun(const std::string& program, const std::string& args, bool exec_mpirun = false) {
  return std::string("ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ") +
         (exec_mpirun ? "exec " : "") + "mpirun -np 2 --oversubscribe --allow-run-as-root " +
         testing::bin_path(program) + " " + args;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

size_t event_files(const std::string& dir) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    n += entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  }
  return n;
}

// "accuracy = A, accuracy@5 = B, global_step = N, loss = L" of the first eval line for `step`.
double eval_value(const ToolOutput& out, int step, const std::string& key) {
  const size_t line = out.output.find("Saving dict for global step " + std::to_string(step));
  if (line == std::string::npos) return -1;
  const size_t at = out.output.find(key + " = ", line);
  return std::stod(out.output.substr(at + key.size() + 3));
}

// 10 classes are labels 1..10; 4 training shards (2 per replica), 2 validation shards of 12
// images; the eval batch of 4 splits into 2 per replica, so every batch is full either way.
std::string flags(const std::string& data_dir, const std::string& model_dir) {
  return "--data_dir=" + data_dir + " --model_dir=" + model_dir +
         " --use_tpu=False --num_threads=1 --iterations=2 --train_batch_size=4 "
         "--eval_batch_size=4 --width=75 --height=75 --depth_multiplier=0.1 --num_classes=11 "
         "--save_checkpoints_secs=0 --num_parallel_calls=1";
}

TEST(DataParallel, TwoProcessesTrainEvaluateAndResumeAsOne) {
  TempDir dir;
  const std::string data = dir.sub("data"), model = dir.sub("model");
  ToolOutput made =
      run_tool("make_fake_imagenet", "--output_dir=" + data +
                                         " --num_train_images=64 --num_validation_images=24 "
                                         "--train_shards=4 --validation_shards=2 --image_size=48 "
                                         "--num_classes=10 --num_threads=1");
  ASSERT_EQ(made.exit_code, 0) << made.output;

  ToolOutput run = run_command(mpirun("inception_v3",
                                      "--mode=train_and_eval --train_steps=4 "
                                      "--train_steps_per_eval=2 " +
                                          flags(data, model)));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(occurrences(run.output, "data parallel over MPI, 2 processes"), 1u) << run.output;
  EXPECT_EQ(occurrences(run.output, "Running inception_v3"), 1u) << run.output;
  EXPECT_EQ(occurrences(run.output, "\nstep = 4, loss = "), 1u) << run.output;
  EXPECT_EQ(occurrences(run.output, "Saving checkpoints for 4 "), 1u) << run.output;
  EXPECT_EQ(occurrences(run.output, "Saving dict for global step 4:"), 1u) << run.output;
  EXPECT_EQ(latest_step(model), 4);
  EXPECT_EQ(event_files(model), 1u);
  EXPECT_EQ(event_files(model + "/eval"), 1u);

  // One process evaluating the saved step-4 checkpoint over all 24 images agrees with the two
  // replicas' split evaluation.
  ToolOutput alone = run_tool("inception_v3",
                              "--mode=eval --train_steps=4 --eval_timeout=0 " + flags(data, model));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_DOUBLE_EQ(eval_value(alone, 4, "accuracy"), eval_value(run, 4, "accuracy"))
      << run.output << alone.output;
  EXPECT_DOUBLE_EQ(eval_value(alone, 4, "accuracy@5"), eval_value(run, 4, "accuracy@5"));
  EXPECT_NEAR(eval_value(alone, 4, "loss"), eval_value(run, 4, "loss"),
              1e-4 * eval_value(alone, 4, "loss"));

  ToolOutput resumed =
      run_command(mpirun("inception_v3", "--mode=train --train_steps=6 " + flags(data, model)));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(occurrences(resumed.output, "Restoring parameters from"), 1u) << resumed.output;
  EXPECT_EQ(occurrences(resumed.output, "global step 4)"), 1u) << resumed.output;
  EXPECT_TRUE(resumed.contains("step = 6, loss = ")) << resumed.output;
  EXPECT_EQ(latest_step(model), 6);

  ToolOutput eval = run_command(mpirun("inception_v3", "--mode=eval " + flags(data, model)));
  EXPECT_NE(eval.exit_code, 0) << eval.output;
  EXPECT_TRUE(eval.contains("start it without mpirun")) << eval.output;
}

// Kills, when it goes, every process whose command line holds `marker` (a test's own temp
// directory): replicas an mpirun left running when the test failed, which would otherwise train
// on and take the cores from whatever runs next.
class KillProcessesNaming {
 public:
  explicit KillProcessesNaming(std::string marker) : marker_(std::move(marker)) {}
  ~KillProcessesNaming() {
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(it->path() / "cmdline");
      std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const pid_t pid = static_cast<pid_t>(std::stol(name));
      if (pid != getpid() && cmdline.find(marker_) != std::string::npos) kill(pid, SIGKILL);
    }
  }
  KillProcessesNaming(const KillProcessesNaming&) = delete;
  KillProcessesNaming& operator=(const KillProcessesNaming&) = delete;

 private:
  std::string marker_;
};

TEST(DataParallel, SigtermToMpirunLeavesACheckpoint) {
  TempDir dir;
  const std::string model = dir.sub("model"), log_path = dir.sub("log.txt");
  const KillProcessesNaming leftovers(model);
  Background mpi = Background::shell(
      mpirun("inception_v3",
             "--mode=train --use_data=fake --use_tpu=False --num_threads=1 "
             "--iterations=1 --train_steps=100000 --train_batch_size=4 --width=75 "
             "--height=75 --depth_multiplier=0.1 --num_classes=10 "
             "--save_checkpoints_secs=0 --model_dir=" +
                 model,
             /*exec_mpirun=*/true),
      log_path);
  ASSERT_TRUE(mpi.started());
  ASSERT_TRUE(mpi.wait_for("\nstep = 3,", 300, std::chrono::milliseconds(100)))
      << "mpirun ended early or logged no step 3:\n"
      << mpi.log();
  ASSERT_EQ(kill(mpi.pid(), SIGTERM), 0);  // mpirun forwards it to both replicas
  ASSERT_NE(mpi.wait_exit(300), -1) << mpi.log();
  const std::string log = mpi.log();
  // The checkpoint is what counts. The log's last lines come through mpirun, which, once
  // signalled, may stop passing them on (and then the replicas, whose stdout no longer blocks
  // after the signal, drop them): where they came, they came once, from the leader.
  const int64_t step = latest_step(model);
  EXPECT_GE(step, 3) << log;
  EXPECT_LE(occurrences(log, "Stop requested by signal 15"), 1u) << log;
  EXPECT_LE(occurrences(log, "Saving checkpoints for " + std::to_string(step) + " "), 1u) << log;
}

}  // namespace
}  // namespace ic
