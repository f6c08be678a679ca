// Helpers for tests that run the real programs from build/bin (IC_TEST_BIN_DIR, set by CTest;
// otherwise the directory of the test binary itself).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/temp_dir_test_util.h"
#include "io/checkpoint_dir.h"
#include "io/checkpoint_recovery.h"

namespace ic::testing {

inline std::string bin_path(const std::string& program) {
  const char* dir = std::getenv("IC_TEST_BIN_DIR");
  if (dir != nullptr && *dir != '\0') return std::string(dir) + "/" + program;
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / program).string();
}

struct ToolOutput {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  bool contains(const std::string& text) const { return output.find(text) != std::string::npos; }
};

// Runs a shell command line and waits for it.
inline ToolOutput run_command(const std::string& command_line) {
  ToolOutput result;
  const std::string command = command_line + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Runs `program args` from the build's bin directory and waits for it.
inline ToolOutput run_tool(const std::string& program, const std::string& args) {
  return run_command(bin_path(program) + " " + args);
}

// run_tool under timeout(1): a tool that hangs on a hostile input fails its test (124)
// instead of the whole suite.
inline ToolOutput run_bounded(const std::string& program, const std::string& args,
                              int seconds = 300) {
  return run_command("timeout " + std::to_string(seconds) + " " + bin_path(program) + " " + args);
}

// The global step of model_dir's newest checkpoint; -1 when there is none.
inline int64_t latest_step(const std::string& model_dir) {
  auto latest = latest_checkpoint(model_dir);
  if (!latest.ok() || !latest->has_value()) return -1;
  return checkpoint_step(**latest).value_or(-1);
}

// The global step a restarted trainer resumes from: find_resume_point's choice, which after a
// kill may be a complete save newer than the one the index names; -1 when there is none.
inline int64_t resume_step(const std::string& model_dir) {
  auto point = find_resume_point(
      model_dir, [](const CheckpointContents&, const std::string&) { return Status(); });
  if (!point.ok() || !point->has_value()) return -1;
  return checkpoint_step((*point)->path).value_or(-1);
}

// Trains a tiny Inception v3 on fake data to `steps` (absolute) in model_dir, one thread, one
// checkpoint at the end; `extra` flags come last and win.
inline ToolOutput train_tiny_model(const std::string& model_dir, int steps,
                                   const std::string& extra = "") {
  return run_command("timeout 300 " + bin_path("inception_v3") +
                     " --mode=train --use_data=fake --use_tpu=False --num_threads=1"
                     " --iterations=2 --train_batch_size=2 --width=75 --height=75"
                     " --depth_multiplier=0.1 --num_classes=11 --save_checkpoints_secs=0"
                     " --train_steps=" +
                     std::to_string(steps) + " --model_dir=" + model_dir + " " + extra);
}

// Trains one of the model zoo's programs (mobilenet_v1, densenet121, ...) at 64 x 64 and 11
// classes on fake data to `steps`, one thread. Batch norm keeps the last batch's statistics
// and there is no EMA, so after a few steps the logits still depend on the image (from a
// batch of 2, EfficientNet-B0's final 2 x 2 maps give statistics that saturate the softmax).
inline ToolOutput train_zoo_model(const std::string& program, const std::string& model_dir,
                                  int steps, const std::string& extra = "") {
  return run_command("timeout 300 " + bin_path(program) +
                     " --mode=train --use_data=fake --use_tpu=False --num_threads=1"
                     " --iterations=2 --train_batch_size=4 --width=64 --height=64"
                     " --num_classes=11 --save_checkpoints_secs=0 --batch_norm_decay=0"
                     " --moving_average=false --train_steps=" +
                     std::to_string(steps) + " --model_dir=" + model_dir + " " + extra);
}

}  // namespace ic::testing
