// The sweep program with the real trainer on fake data: four tiny variants, two at a time,
// give a leaderboard ranked by their best evaluation and the winner's best export copied to
// serving/; a sweep killed part way (the whole process group, as a crash would) resumes
// without training its finished variants again and ends with the same leaderboard, value for
// value, as an uninterrupted sweep.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "infer/npy.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::bin_path;
using testing::run_bounded;
using testing::run_command;
using testing::TempDir;
using testing::ToolOutput;

std::string write_sweep_config(const std::string& dir, int steps,
                               const std::string& schedule = "full") {
  const std::string path = dir + "/sweep-" + schedule + ".json";
  std::ofstream(path) << R"({"trainer": "inception_v3", "schedule": ")" << schedule << R"(",
 "flags": {"use_data": "fake", "use_tpu": false, "iterations": 2, "train_batch_size": 2,
           "eval_batch_size": 2, "eval_total_size": 4, "width": 75, "height": 75,
           "num_classes": 10, "save_checkpoints_secs": 0, "train_steps_per_eval": 2, "seed": 3},
 "grid": {"learning_rate": [0.1, 0.02], "depth_multiplier": [0.1, 0.2]},
 "metric": "loss", "budget": {"train_steps": )"
                      << steps << "}}\n";
  return path;
}

std::vector<std::vector<std::string>> sweep_csv_rows(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream cells_in(line);
    for (std::string cell; std::getline(cells_in, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

// The leaderboard without its timing columns (wall_seconds, examples_per_sec).
std::vector<std::vector<std::string>> sweep_scores(const std::string& path) {
  std::vector<std::vector<std::string>> rows = sweep_csv_rows(path);
  for (auto& row : rows)
    if (row.size() >= 2) row.resize(row.size() - 2);
  return rows;
}

TEST(Sweep, RanksFourVariantsAndCopiesTheWinnerForServing) {
  TempDir dir;
  const std::string config = write_sweep_config(dir.path(), 4);
  const ToolOutput run = run_bounded(
      "sweep", "--sweep_dir=" + dir.sub("sweep") + " --config=" + config + " --parallel=2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto rows = sweep_csv_rows(dir.sub("sweep") + "/leaderboard.csv");
  ASSERT_EQ(rows.size(), 5u) << run.output;
  EXPECT_EQ(rows[0][0], "rank");
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 9u);
    EXPECT_EQ(rows[i][0], std::to_string(i));
    EXPECT_EQ(rows[i][3], "loss");
    EXPECT_EQ(rows[i][6], "4") << "trained to the budget";
    EXPECT_GT(std::stod(rows[i][8]), 0) << "examples/sec";
    if (i > 1) {
      EXPECT_LE(std::stod(rows[i - 1][4]), std::stod(rows[i][4]));  // lower is better
    }
    EXPECT_TRUE(fs::exists(dir.sub("sweep") + "/" + rows[i][1] + "/result.json"));
  }
  std::vector<fs::path> served;
  for (const auto& entry : fs::directory_iterator(dir.sub("sweep") + "/serving"))
    served.push_back(entry.path());
  ASSERT_EQ(served.size(), 1u);
  EXPECT_TRUE(fs::exists(served[0] / "saved_model.pb"));
  std::ifstream winner(served[0] / "assets.extra/sweep_winner.json");
  std::stringstream record;
  record << winner.rdbuf();
  EXPECT_NE(record.str().find("\"variant\": \"" + rows[1][1] + "\""), std::string::npos)
      << record.str();
  // Run again: everything is finished, nothing trains, the winner is already served.
  const ToolOutput again = run_bounded(
      "sweep", "--sweep_dir=" + dir.sub("sweep") + " --config=" + config + " --parallel=2");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("sweep: training"), std::string::npos) << again.output;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.sub("sweep") + "/serving"),
                          fs::directory_iterator()),
            1);
}

// The newest version in `serving` and the text of its sweep_winner.json.
std::pair<fs::path, std::string> newest_served(const std::string& serving) {
  fs::path newest;
  for (const auto& entry : fs::directory_iterator(serving))
    if (newest.empty() ||
        std::stoll(entry.path().filename().string()) > std::stoll(newest.filename().string()))
      newest = entry.path();
  std::ifstream in(newest / "assets.extra/sweep_winner.json");
  std::stringstream record;
  record << in.rdbuf();
  return {newest, record.str()};
}

// --export_format: the finished sweep's winner as safetensors, then int8 (calibrated on
// TFRecord images), each a new version that classify reads; int8 without calibration images
// (the variants trained on fake data) is refused saying so.
TEST(Sweep, ExportsTheWinnerInTheFormatAsked) {
  TempDir dir;
  const std::string config = write_sweep_config(dir.path(), 4);
  const std::string sweep = "sweep --sweep_dir=" + dir.sub("sweep") + " --config=" + config;
  const ToolOutput run = run_bounded("sweep", sweep.substr(6) + " --parallel=2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string serving = dir.sub("sweep") + "/serving";

  const ToolOutput safetensors =
      run_bounded("sweep", sweep.substr(6) + " --export_format=safetensors");
  ASSERT_EQ(safetensors.exit_code, 0) << safetensors.output;
  EXPECT_EQ(safetensors.output.find("sweep: training"), std::string::npos) << safetensors.output;
  auto [version, record] = newest_served(serving);
  EXPECT_TRUE(fs::exists(version / "model.safetensors")) << version;
  EXPECT_FALSE(fs::exists(version / "saved_model.pb")) << version;
  EXPECT_NE(record.find("\"format\": \"safetensors\""), std::string::npos) << record;
  EXPECT_EQ(std::distance(fs::directory_iterator(serving), fs::directory_iterator()), 2);

  const ToolOutput no_data = run_bounded("sweep", sweep.substr(6) + " --export_format=int8");
  EXPECT_NE(no_data.exit_code, 0) << no_data.output;
  EXPECT_TRUE(no_data.contains("--calibration_data")) << no_data.output;

  const ToolOutput data = run_command(
      testing::bin_path("make_fake_imagenet") + " --output_dir=" + dir.sub("data") +
      " --num_train_images=16 --num_validation_images=4 --train_shards=1 --validation_shards=1"
      " --image_size=80 --num_classes=10 --seed=2 --num_threads=1");
  ASSERT_EQ(data.exit_code, 0) << data.output;
  const ToolOutput int8 = run_bounded("sweep", sweep.substr(6) +
                                                   " --export_format=int8 --calibration_images=8"
                                                   " --calibration_data=" +
                                                   dir.sub("data"));
  ASSERT_EQ(int8.exit_code, 0) << int8.output;
  std::tie(version, record) = newest_served(serving);
  EXPECT_NE(record.find("\"format\": \"int8\""), std::string::npos) << record;
  EXPECT_TRUE(fs::exists(version / "model.onnx")) << version;
  // classify serves the newest version, the int8 one, in int8.
  NpyArray image{{1, 75, 75, 3}, std::vector<float>(75 * 75 * 3, 0.25f)};
  ASSERT_TRUE(write_npy(dir.sub("image.npy"), image).ok());
  const ToolOutput classify =
      run_command(testing::bin_path("classify") + " --model_dir=" + serving +
                  " --precision=int8 --num_threads=1 " + dir.sub("image.npy"));
  EXPECT_EQ(classify.exit_code, 0) << classify.output;
  EXPECT_TRUE(classify.contains(version.filename().string())) << classify.output;
  EXPECT_TRUE(classify.contains("classify: int8: ")) << classify.output;
  EXPECT_TRUE(classify.contains(" of its int8 convolutions timed faster in float32"))
      << classify.output;
}

// "model" in the grid: each variant runs its model's trainer, and the leaderboard ranks both.
TEST(Sweep, AGridOverModelsTrainsEachWithItsOwnTrainer) {
  TempDir dir;
  const std::string config = dir.sub("models.json");
  std::ofstream(config) << R"({"trainer": "inception_v3",
 "flags": {"use_data": "fake", "use_tpu": false, "iterations": 2, "train_batch_size": 2,
           "eval_batch_size": 2, "eval_total_size": 4, "width": 75, "height": 75,
           "num_classes": 10, "save_checkpoints_secs": 0, "train_steps_per_eval": 2, "seed": 3,
           "depth_multiplier": 0.1},
 "grid": {"model": ["inception_v3", "resnet50"]}, "metric": "loss", "budget": {"train_steps": 2}})";
  const ToolOutput run = run_bounded(
      "sweep", "--sweep_dir=" + dir.sub("sweep") + " --config=" + config + " --parallel=2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* model : {"inception_v3", "resnet50"}) {
    std::ifstream log(dir.sub("sweep") + "/" + (model[0] == 'i' ? "00" : "01") + "_model=" + model +
                      "/train.log");
    std::stringstream text;
    text << log.rdbuf();
    EXPECT_NE(text.str().find(std::string("Running ") + model + " --mode=train_and_eval"),
              std::string::npos)
        << text.str();
  }
  const auto rows = sweep_csv_rows(dir.sub("sweep") + "/leaderboard.csv");
  ASSERT_EQ(rows.size(), 3u) << run.output;
  EXPECT_NE(rows[1][2].find("--model="), std::string::npos) << rows[1][2];
}

TEST(Sweep, AKilledSweepResumesWithoutRetrainingAndGivesTheSameLeaderboard) {
  TempDir dir;
  const std::string config = write_sweep_config(dir.path(), 8);
  const ToolOutput whole =
      run_bounded("sweep", "--sweep_dir=" + dir.sub("whole") + " --config=" + config);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;

  // The same sweep, killed with its trainers once the first variant is finished.
  const std::string killed = dir.sub("killed");
  const pid_t sweep = fork();
  if (sweep == 0) {
    setpgid(0, 0);
    const std::string command = "exec " + bin_path("sweep") + " --sweep_dir=" + killed +
                                " --config=" + config + " >" + dir.sub("killed.log") + " 2>&1";
    execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
    _exit(127);
  }
  setpgid(sweep, sweep);
  const std::string first_done = killed + "/00_learning_rate=0.1_depth_multiplier=0.1/result.json";
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!fs::exists(first_done) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the second variant
  kill(-sweep, SIGKILL);
  waitpid(sweep, nullptr, 0);
  ASSERT_TRUE(fs::exists(first_done)) << "the first variant did not finish within 240 s";
  ASSERT_FALSE(fs::exists(killed + "/leaderboard.csv"));
  const std::string first_log = killed + "/00_learning_rate=0.1_depth_multiplier=0.1/train.log";
  const auto first_log_size = fs::file_size(first_log);

  const ToolOutput resumed = run_bounded("sweep", "--sweep_dir=" + killed + " --config=" + config);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("00_learning_rate=0.1_depth_multiplier=0.1 is finished already"),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(fs::file_size(first_log), first_log_size) << "the finished variant trained again";
  EXPECT_EQ(sweep_scores(killed + "/leaderboard.csv"),
            sweep_scores(dir.sub("whole") + "/leaderboard.csv"))
      << resumed.output;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The "best" of a rung file: {"train_steps": S, ..., "best": X}.
double rung_score(const std::string& path) {
  const std::string text = file_text(path);
  const size_t at = text.find("\"best\": ");
  EXPECT_NE(at, std::string::npos) << path << ": " << text;
  return at == std::string::npos ? 0 : std::stod(text.substr(at + 8));
}

// Four variants, eta 2, a budget of 8 steps: rungs at steps 2, 4 and 8. Each rung keeps the
// better half by the scores its variants had when they got there; the one that goes the
// distance continued from its checkpoints and ends exactly as the same variant trained to step
// 8 in one go (the full sweep), in less training than the full sweep's.
TEST(Sweep, SuccessiveHalvingKeepsTheBestHalfAndContinuesFromCheckpoints) {
  TempDir dir;
  const std::string full_config = write_sweep_config(dir.path(), 8);
  const std::string halving_config = write_sweep_config(dir.path(), 8, "halving");
  const std::string halving = dir.sub("halving");
  const ToolOutput run =
      run_bounded("sweep", "--sweep_dir=" + halving + " --config=" + halving_config);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(run.contains("successive halving (eta 2) at steps 2 4 8")) << run.output;

  const std::vector<std::string> names = {
      "00_learning_rate=0.1_depth_multiplier=0.1", "01_learning_rate=0.1_depth_multiplier=0.2",
      "02_learning_rate=0.02_depth_multiplier=0.1", "03_learning_rate=0.02_depth_multiplier=0.2"};
  // Rung 1: all four at step 2; the two lowest losses go on.
  std::vector<std::pair<double, std::string>> first;
  for (const std::string& n : names) {
    ASSERT_TRUE(fs::exists(halving + "/" + n + "/rung-2.json")) << run.output;
    first.emplace_back(rung_score(halving + "/" + n + "/rung-2.json"), n);
  }
  std::stable_sort(first.begin(), first.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(fs::exists(halving + "/" + first[i].second + "/rung-4.json"), i < 2)
        << first[i].second << "\n"
        << run.output;
  // Rung 2: the better of those two at step 4 goes to step 8.
  const double a = rung_score(halving + "/" + first[0].second + "/rung-4.json");
  const double b = rung_score(halving + "/" + first[1].second + "/rung-4.json");
  const std::string winner = b < a ? first[1].second : first[0].second;
  const std::string runner_up = b < a ? first[0].second : first[1].second;

  const auto rows = sweep_csv_rows(halving + "/leaderboard.csv");
  ASSERT_EQ(rows.size(), 5u) << run.output;
  EXPECT_EQ(rows[1][1], winner);
  EXPECT_EQ(rows[1][6], "8");
  EXPECT_EQ(rows[2][1], runner_up);
  EXPECT_EQ(rows[2][6], "4");
  EXPECT_EQ(rows[3][6], "2");
  EXPECT_EQ(rows[4][6], "2");
  // It resumed from its step-4 checkpoint, not from zero.
  EXPECT_NE(file_text(halving + "/" + winner + "/train.log")
                .find("Restoring parameters from " + halving + "/" + winner +
                      "/model/model.ckpt-4 (global step 4)"),
            std::string::npos);
  std::ifstream served(fs::directory_iterator(halving + "/serving")->path() /
                       "assets.extra/sweep_winner.json");
  std::stringstream record;
  record << served.rdbuf();
  EXPECT_NE(record.str().find(winner), std::string::npos) << record.str();

  // The same variant trained to step 8 in one go scores the same, bit for bit.
  const ToolOutput whole =
      run_bounded("sweep", "--sweep_dir=" + dir.sub("full") + " --config=" + full_config);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  bool found = false;
  for (const auto& row : sweep_csv_rows(dir.sub("full") + "/leaderboard.csv")) {
    if (row.size() < 6 || row[1] != winner) continue;
    found = true;
    EXPECT_EQ(row[4], rows[1][4]) << "best";
    EXPECT_EQ(row[5], rows[1][5]) << "its step";
  }
  EXPECT_TRUE(found) << whole.output;

  // Run again: every variant is finished, nothing trains, the leaderboard is the same.
  const auto before = sweep_csv_rows(halving + "/leaderboard.csv");
  const ToolOutput again =
      run_bounded("sweep", "--sweep_dir=" + halving + " --config=" + halving_config);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("sweep: training"), std::string::npos) << again.output;
  EXPECT_EQ(sweep_csv_rows(halving + "/leaderboard.csv"), before);
}

// Open MPI leaks at exit by design: LeakSanitizer (sanitizer builds) is off for its processes.
std::string mpirun(int processes, const std::string& program, const std::string& args) {
  return "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 timeout 300 mpirun -np " +
         std::to_string(processes) + " --oversubscribe --allow-run-as-root " +
         testing::bin_path(program) + " " + args;
}

// Every tensor of model_dir's checkpoint of `step`, by name (the metadata, which names the
// model_dir and the run, left out).
std::map<std::string, std::string> checkpoint_tensors(const std::string& model_dir, int step) {
  Result<CheckpointContents> read =
      read_checkpoint(model_dir + "/model.ckpt-" + std::to_string(step));
  EXPECT_TRUE(read.ok()) << read.status().message();
  std::map<std::string, std::string> tensors;
  if (read.ok())
    for (const TensorEntry& t : read->tensors) tensors[t.name] = t.bytes;
  return tensors;
}

// `mpirun -np 4 sweep --groups=2`: two groups of two processes train the two variants at the
// same time, each data parallel over its group, and each ends with the checkpoint, bit for bit,
// that `mpirun -np 2 inception_v3` gives for that variant alone.
TEST(Sweep, TwoGroupsOfAnMpirunJobEachTrainAVariantAsTwoProcessesAloneWould) {
  TempDir dir;
  const std::string flags =
      "--use_data=fake --use_tpu=false --iterations=2 --train_batch_size=4 --eval_batch_size=2 "
      "--eval_total_size=4 --width=75 --height=75 --num_classes=10 --save_checkpoints_secs=0 "
      "--train_steps_per_eval=2 --seed=3 --depth_multiplier=0.1 --num_threads=1";
  const std::string config = dir.sub("groups.json");
  std::ofstream(config) << R"({"trainer": "inception_v3",
 "flags": {"use_data": "fake", "use_tpu": false, "iterations": 2, "train_batch_size": 4,
           "eval_batch_size": 2, "eval_total_size": 4, "width": 75, "height": 75,
           "num_classes": 10, "save_checkpoints_secs": 0, "train_steps_per_eval": 2, "seed": 3,
           "depth_multiplier": 0.1, "num_threads": 1},
 "grid": {"learning_rate": [0.1, 0.02]}, "metric": "loss", "budget": {"train_steps": 4}})";
  const std::string sweep_dir = dir.sub("sweep");
  const ToolOutput run = run_command(
      mpirun(4, "sweep", "--sweep_dir=" + sweep_dir + " --config=" + config + " --groups=2"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(run.contains("2 group(s) of 2 processes")) << run.output;
  EXPECT_TRUE(run.contains("sweep: group 0 (2 processes) training 00_learning_rate=0.1"))
      << run.output;
  EXPECT_TRUE(run.contains("sweep: group 1 (2 processes) training 01_learning_rate=0.02"))
      << run.output;
  EXPECT_TRUE(run.contains("sweep: 2 of 2 variants finished")) << run.output;
  EXPECT_EQ(sweep_csv_rows(sweep_dir + "/leaderboard.csv").size(), 3u);

  for (const std::string& lr : std::vector<std::string>{"0.1", "0.02"}) {
    const std::string name = (lr == "0.1" ? "00" : "01") + std::string("_learning_rate=") + lr;
    const std::string in_group = sweep_dir + "/" + name;
    EXPECT_NE(file_text(in_group + "/train.log")
                  .find("data parallel over MPI, 2 processes (a group of the job's)"),
              std::string::npos)
        << file_text(in_group + "/train.log");
    const std::string alone = dir.sub("alone-" + lr);
    const ToolOutput solo = run_command(
        mpirun(2, "inception_v3",
               flags + " --learning_rate=" + lr +
                   " --mode=train_and_eval --train_steps=4 --model_dir=" + alone + "/model"));
    ASSERT_EQ(solo.exit_code, 0) << solo.output;
    const auto trained_in_group = checkpoint_tensors(in_group + "/model", 4);
    ASSERT_FALSE(trained_in_group.empty()) << in_group;
    EXPECT_TRUE(trained_in_group == checkpoint_tensors(alone + "/model", 4))
        << name << ": the group's checkpoint differs from the one trained alone";
  }
}

TEST(Sweep, ABadConfigIsRefusedNamingTheFile) {
  TempDir dir;
  const std::string path = dir.sub("bad.json");
  std::ofstream(path) << R"({"trainer": "inception_v3", "grid": {"model_dir": ["/x"]},
                             "budget": {"train_steps": 1}})";
  const ToolOutput run = run_bounded("sweep", "--sweep_dir=" + dir.sub("s") + " --config=" + path);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(run.contains(path + ": \"grid\": --model_dir is set by the sweep")) << run.output;
}

}  // namespace
}  // namespace ic
