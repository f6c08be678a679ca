// export_model killed (SIGKILL) at random moments, and out of room part way: a directory
// poller (serve's rule, newest_servable) never sees a half-written version, what it picks
// always loads, a failed export leaves the previous version the one served, and the next
// export succeeds. The moments come from a fixed seed, spread over one export's duration.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/inference_model.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::ToolOutput;

// Every numbered version under `export_dir` is complete, and the one a poller would serve
// loads. temp-* directories of killed exports may be there (no poller reads them) until the
// next export removes them.
void expect_only_whole_versions(const std::string& export_dir, const std::string& when) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(export_dir, ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const bool safetensors = fs::exists(entry.path() / "model.safetensors");
    const bool saved_model = fs::exists(entry.path() / "saved_model.pb") &&
                             fs::exists(entry.path() / "variables" / "variables.index");
    EXPECT_TRUE(safetensors || saved_model) << when << ": version " << name << " is partial";
  }
  Result<std::optional<std::string>> newest = newest_servable(export_dir);
  ASSERT_TRUE(newest.ok()) << when << ": " << newest.status().message();
  if (!newest->has_value()) return;
  Result<InferenceModel> loaded = load_for_inference("", **newest);
  EXPECT_TRUE(loaded.ok()) << when << ": " << **newest << ": " << loaded.status().message();
}

// Runs `command` in a shell and kills it with SIGKILL after `delay` (unless it ended first).
void run_and_kill(const std::string& command, std::chrono::microseconds delay) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command + " >/dev/null 2>&1").c_str(), nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(delay);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

std::string export_command(const std::string& model_dir, const std::string& export_dir,
                           const std::string& format) {
  return testing::bin_path("export_model") + " --model_dir=" + model_dir +
         " --export_dir=" + export_dir + " --format=" + format;
}

TEST(ExportChaos, KilledAtRandomMomentsNeverLeavesAHalfVersionAndTheNextExportSucceeds) {
  TempDir dir;
  const ToolOutput trained = testing::train_tiny_model(dir.sub("model"), 1);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string exports = dir.sub("export");
  // One whole export first: how long one takes, and a version for pollers to fall back on.
  const auto start = std::chrono::steady_clock::now();
  const ToolOutput first =
      testing::run_command(export_command(dir.sub("model"), exports, "safetensors"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto duration = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  std::mt19937 random(20261201);
  std::uniform_int_distribution<int64_t> moment(0, duration.count());
  for (int round = 0; round < 10; ++round) {
    const std::string format = round % 2 ? "saved_model" : "safetensors";
    const std::chrono::microseconds delay(moment(random));
    run_and_kill(export_command(dir.sub("model"), exports, format), delay);
    expect_only_whole_versions(exports, "round " + std::to_string(round) + " (" + format +
                                            ", killed after " +
                                            std::to_string(delay.count() / 1000) + " ms)");
  }
  // How many kills landed mid-write (each leaves a temp-* directory behind): printed, since
  // where a kill lands depends on the machine's speed.
  int mid_write = 0;
  for (const auto& entry : fs::directory_iterator(exports)) {
    mid_write += entry.path().filename().string().rfind("temp-", 0) == 0;
  }
  std::cout << "export chaos: " << mid_write << " of 10 kills landed mid-write\n";
  // An export still being written (its directory locked, as a live exporter holds it) is left
  // alone by the next export's sweep; the killed ones' directories are removed.
  const std::string live = exports + "/temp-1";
  ASSERT_TRUE(fs::create_directory(live));
  const int live_fd = ::open(live.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(live_fd, 0);
  ASSERT_EQ(::flock(live_fd, LOCK_EX | LOCK_NB), 0);
  const ToolOutput last =
      testing::run_command(export_command(dir.sub("model"), exports, "safetensors"));
  EXPECT_EQ(last.exit_code, 0) << last.output;
  expect_only_whole_versions(exports, "after the last export");
  std::vector<std::string> temps;
  for (const auto& entry : fs::directory_iterator(exports)) {
    const std::string name = entry.path().filename();
    if (name.rfind("temp-", 0) == 0) temps.push_back(name);
  }
  EXPECT_EQ(temps, std::vector<std::string>{"temp-1"});
  ::close(live_fd);
}

TEST(ExportChaos, AnExportThatRunsOutOfRoomLeavesThePreviousVersionServed) {
  TempDir dir;
  const ToolOutput trained = testing::train_tiny_model(dir.sub("model"), 1);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string exports = dir.sub("export");
  ASSERT_EQ(
      testing::run_command(export_command(dir.sub("model"), exports, "safetensors")).exit_code, 0);
  Result<std::optional<std::string>> before = newest_servable(exports);
  ASSERT_TRUE(before.ok() && before->has_value());
  // A file-size limit, with SIGXFSZ ignored, makes the export's writes fail part way (EFBIG)
  // as a full disk does (ENOSPC); tests/tools/disk_full_test.cc has the trainer's side.
  const ToolOutput full = testing::run_command(
      "trap '' XFSZ; ulimit -f 8; " + export_command(dir.sub("model"), exports, "safetensors"));
  EXPECT_NE(full.exit_code, 0) << full.output;
  EXPECT_TRUE(full.contains("export to " + exports + " failed")) << full.output;
  Result<std::optional<std::string>> after = newest_servable(exports);
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ(**after, **before);
  expect_only_whole_versions(exports, "after the failed export");
  EXPECT_EQ(
      testing::run_command(export_command(dir.sub("model"), exports, "safetensors")).exit_code, 0);
}

}  // namespace
}  // namespace ic
