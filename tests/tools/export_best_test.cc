// --export_best with the real inception_v3 trainer on fake data: each evaluation that beats
// the best export so far is exported as a SavedModel with its score, none other is, and the
// newest export is the best; after a SIGKILL the restarted run reads the bar back from the
// exports and exports nothing worse; the flag is refused without --export_dir or evaluations.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "io/file_system.h"
#include "tools/tool_runner.h"
#include "train/best_export.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::bin_path;
using testing::resume_step;
using testing::run_bounded;
using testing::TempDir;
using testing::ToolOutput;

std::string tiny_run(const std::string& model_dir, const std::string& export_dir) {
  return "--mode=train_and_eval --use_data=fake --use_tpu=False --iterations=2 "
         "--train_batch_size=2 --eval_batch_size=2 --eval_total_size=4 --width=75 --height=75 "
         "--depth_multiplier=0.1 --num_classes=10 --save_checkpoints_secs=0 --num_threads=1 "
         "--train_steps_per_eval=2 --export_best=loss --exports_to_keep=0 --model_dir=" +
         model_dir + " --export_dir=" + export_dir;
}

// The export_dir's numbered versions with their records, oldest first.
std::vector<std::pair<int64_t, BestExportRecord>> best_exports(const std::string& export_dir) {
  std::vector<std::pair<int64_t, BestExportRecord>> found;
  if (!fs::exists(export_dir)) return found;
  for (const auto& entry : fs::directory_iterator(export_dir)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string record_path = entry.path().string() + "/" + kBestExportRecord;
    Result<std::string> text = read_file_to_string(record_path, 1 << 16);
    EXPECT_TRUE(text.ok()) << record_path;
    EXPECT_TRUE(fs::exists(entry.path() / "saved_model.pb")) << entry.path();
    if (!text.ok()) continue;
    Result<BestExportRecord> record = parse_best_export_record(*text, record_path);
    EXPECT_TRUE(record.ok()) << record.status().message();
    if (record.ok()) found.emplace_back(std::stoll(name), *record);
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return found;
}

// Every evaluation's loss in the log ("Saving dict for global step N: ..., loss = X").
std::vector<double> logged_losses(const std::string& log) {
  std::vector<double> losses;
  const std::regex line(R"(Saving dict for global step \d+: .*loss = ([0-9.eE+-]+))");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it)
    losses.push_back(std::stod((*it)[1]));
  return losses;
}

size_t export_best_lines(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ExportBest, ExportsEachImprovementAndTheNewestIsTheBest) {
  TempDir dir;
  const std::string export_dir = dir.sub("export");
  const ToolOutput run =
      run_bounded("inception_v3", "--train_steps=10 " + tiny_run(dir.sub("model"), export_dir));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::vector<double> losses = logged_losses(run.output);
  ASSERT_EQ(losses.size(), 5u) << run.output;
  const auto exports = best_exports(export_dir);
  ASSERT_FALSE(exports.empty()) << run.output;
  EXPECT_EQ(exports.size(), export_best_lines(run.output, "--export_best: exported "))
      << run.output;
  EXPECT_EQ(exports.size() + export_best_lines(run.output, "--export_best: not exported"),
            losses.size())
      << run.output;
  for (size_t i = 1; i < exports.size(); ++i)
    EXPECT_LT(exports[i].second.value, exports[i - 1].second.value) << run.output;
  // The first evaluation is always exported, and the newest export holds the lowest loss.
  EXPECT_EQ(exports.front().second.global_step, 2);
  const double lowest = *std::min_element(losses.begin(), losses.end());
  EXPECT_NEAR(exports.back().second.value, lowest, 1e-5 * lowest) << run.output;
  EXPECT_FALSE(run.contains("Exported the newest checkpoint")) << run.output;
  EXPECT_TRUE(run.contains("--export_best: the best export is " + export_dir + "/" +
                           std::to_string(exports.back().first)))
      << run.output;
}

// Starts `command` in the background; the caller kills it.
pid_t start_trainer(const std::string& command, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command + " >" + log + " 2>&1").c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

TEST(ExportBest, KeepsTheBestAcrossAKillAndRestart) {
  TempDir dir;
  const std::string model_dir = dir.sub("model"), export_dir = dir.sub("export");
  const pid_t trainer = start_trainer(
      bin_path("inception_v3") + " --train_steps=400 " + tiny_run(model_dir, export_dir),
      dir.sub("first.log"));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (best_exports(export_dir).empty() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(trainer, SIGKILL);
  waitpid(trainer, nullptr, 0);
  auto exports = best_exports(export_dir);
  ASSERT_FALSE(exports.empty()) << "no export within 240 s";
  // Make the newest export unbeatable (no loss is below 0): a restarted run that read the bar
  // from the exports exports nothing more; one that forgot it would export its first score.
  BestExportRecord rigged = exports.back().second;
  rigged.value = 0;
  std::ofstream(export_dir + "/" + std::to_string(exports.back().first) + "/" + kBestExportRecord)
      << best_export_record_json(rigged);
  // The kill may land between a save and the index's update: the restart resumes from that
  // newer save, and its two evaluations are counted from there.
  const int64_t resumed_at = resume_step(model_dir);
  ASSERT_GE(resumed_at, 2);
  const ToolOutput again =
      run_bounded("inception_v3", "--train_steps=" + std::to_string(resumed_at + 4) + " " +
                                      tiny_run(model_dir, export_dir));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(again.contains("--export_best: the best export so far is")) << again.output;
  EXPECT_EQ(export_best_lines(again.output, "--export_best: not exported"), 2u) << again.output;
  EXPECT_EQ(best_exports(export_dir).size(), exports.size()) << again.output;
}

TEST(ExportBest, NeedsAnExportDirAndEvaluations) {
  TempDir dir;
  const ToolOutput no_dir = run_bounded(
      "inception_v3", "--use_data=fake --export_best=accuracy --model_dir=" + dir.sub("m"));
  EXPECT_EQ(no_dir.exit_code, 2) << no_dir.output;
  EXPECT_TRUE(no_dir.contains("--export_best=accuracy needs --export_dir")) << no_dir.output;
  const ToolOutput train_only = run_bounded("inception_v3",
                                            "--use_data=fake --mode=train --export_best=accuracy "
                                            "--export_dir=" +
                                                dir.sub("e") + " --model_dir=" + dir.sub("m"));
  EXPECT_EQ(train_only.exit_code, 2) << train_only.output;
  EXPECT_TRUE(train_only.contains("not --mode=train")) << train_only.output;
  const ToolOutput bad_metric =
      run_bounded("inception_v3", "--use_data=fake --export_best=top1 --model_dir=" + dir.sub("m"));
  EXPECT_EQ(bad_metric.exit_code, 2) << bad_metric.output;
  EXPECT_TRUE(bad_metric.contains("accuracy@5")) << bad_metric.output;
}

}  // namespace
}  // namespace ic
