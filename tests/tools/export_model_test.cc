// export_model and the trainers' --export_dir, run as programs: the export lands in a new
// numbered directory with the SavedModel's files (or model.onnx, which libonnx's checker
// accepts); no checkpoint and an unknown format are clear errors.
// tests/infer/saved_model_export_test.cc checks what the files hold; tests/interop/run.sh has
// TensorFlow load them.
#include <gtest/gtest.h>
#include <onnx/checker.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "infer/npy.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;
using testing::TempDir;
using testing::ToolOutput;

// The entries of `dir` (names only), sorted.
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

void expect_saved_model(const std::string& dir) {
  EXPECT_TRUE(fs::is_regular_file(dir + "/saved_model.pb")) << dir;
  EXPECT_TRUE(fs::is_regular_file(dir + "/variables/variables.index")) << dir;
  EXPECT_TRUE(fs::is_regular_file(dir + "/variables/variables.data-00000-of-00001")) << dir;
}

TEST(ExportDir, TheTrainerExportsItsNewestCheckpointAfterTheRun) {
  TempDir dir;
  const ToolOutput run =
      testing::train_tiny_model(dir.sub("model"), 1, "--export_dir=" + dir.sub("export"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_FALSE(run.contains("not acted on")) << run.output;
  const std::vector<std::string> exports = entries(dir.sub("export"));
  ASSERT_EQ(exports.size(), 1u) << run.output;
  EXPECT_NE(exports[0].find_first_of("0123456789"), std::string::npos);
  EXPECT_EQ(exports[0].find_first_not_of("0123456789"), std::string::npos) << exports[0];
  EXPECT_TRUE(run.contains("as a SavedModel to " + dir.sub("export") + "/" + exports[0]))
      << run.output;
  expect_saved_model(dir.sub("export") + "/" + exports[0]);
}

TEST(ExportDir, ARunThatLeavesNoCheckpointIsAnErrorNamingTheModelDir) {
  TempDir dir;
  // Evaluation of an empty model_dir gives up after --eval_timeout and saves nothing.
  const ToolOutput run = testing::run_command(
      "timeout 120 " + testing::bin_path("inception_v3") +
      " --mode=eval --use_data=fake --use_tpu=False --num_threads=1 --width=75 --height=75"
      " --depth_multiplier=0.1 --num_classes=11 --eval_timeout=1 --model_dir=" +
      dir.sub("model") + " --export_dir=" + dir.sub("export"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(run.contains("--export_dir: no checkpoint in " + dir.sub("model"))) << run.output;
  EXPECT_TRUE(entries(dir.sub("export")).empty());
}

TEST(ExportModel, WritesSavedModelAndSafetensorsIntoNewNumberedDirectories) {
  TempDir dir;
  ASSERT_EQ(testing::train_tiny_model(dir.sub("model"), 1).exit_code, 0);
  const ToolOutput saved = run_tool(
      "export_model", "--model_dir=" + dir.sub("model") + " --export_dir=" + dir.sub("export"));
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_TRUE(saved.contains("global step 1")) << saved.output;
  const ToolOutput tensors =
      run_tool("export_model", "--model_dir=" + dir.sub("model") +
                                   " --export_dir=" + dir.sub("export") + " --format=safetensors");
  ASSERT_EQ(tensors.exit_code, 0) << tensors.output;
  const std::vector<std::string> exports = entries(dir.sub("export"));
  ASSERT_EQ(exports.size(), 2u);  // two exports never share a directory
  expect_saved_model(dir.sub("export") + "/" + exports[0]);
  EXPECT_TRUE(fs::is_regular_file(dir.sub("export") + "/" + exports[1] + "/model.safetensors"));
  // classify reads the safetensors export as a checkpoint and finds what it finds in the
  // checkpoint itself (the export holds the EMA weights evaluation uses).
  ASSERT_TRUE(
      write_npy(dir.sub("gray.npy"), NpyArray{{75, 75, 3}, std::vector<float>(75 * 75 * 3, 0.25f)})
          .ok());
  const ToolOutput from_export =
      run_tool("classify", "--top_k=3 --checkpoint=" + dir.sub("export") + "/" + exports[1] +
                               "/model.safetensors " + dir.sub("gray.npy"));
  const ToolOutput from_checkpoint =
      run_tool("classify", "--top_k=3 --model_dir=" + dir.sub("model") + " " + dir.sub("gray.npy"));
  ASSERT_EQ(from_export.exit_code, 0) << from_export.output;
  ASSERT_EQ(from_checkpoint.exit_code, 0) << from_checkpoint.output;
  const auto predictions = [](const std::string& out) { return out.substr(out.find('\n')); };
  EXPECT_EQ(predictions(from_export.output), predictions(from_checkpoint.output));
  // The export base directory itself (as TF Serving is given one): its newest version that
  // holds model.safetensors is read.
  const ToolOutput from_base = run_tool(
      "classify", "--top_k=3 --model_dir=" + dir.sub("export") + " " + dir.sub("gray.npy"));
  ASSERT_EQ(from_base.exit_code, 0) << from_base.output;
  EXPECT_EQ(predictions(from_base.output), predictions(from_checkpoint.output));
  EXPECT_TRUE(from_base.contains(exports[1] + "/model.safetensors")) << from_base.output;
}

TEST(ExportModel, OnnxGoesIntoANumberedDirectoryAndPassesTheChecker) {
  TempDir dir;
  const ToolOutput train = testing::train_tiny_model(dir.sub("model"), 1);
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const ToolOutput run =
      run_tool("export_model", "--model_dir=" + dir.sub("model") +
                                   " --export_dir=" + dir.sub("export") + " --format=onnx");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::vector<std::string> exports = entries(dir.sub("export"));
  ASSERT_EQ(exports.size(), 1u) << run.output;
  const std::string dir_written = dir.sub("export") + "/" + exports[0];
  EXPECT_TRUE(run.contains("as onnx to " + dir_written)) << run.output;
  EXPECT_EQ(entries(dir_written), std::vector<std::string>{"model.onnx"});
  EXPECT_NO_THROW(onnx::checker::check_model(dir_written + "/model.onnx"));
}

TEST(ExportModel, ClearErrors) {
  TempDir dir;
  const ToolOutput none = run_tool(
      "export_model", "--model_dir=" + dir.sub("empty") + " --export_dir=" + dir.sub("export"));
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_TRUE(none.contains(dir.sub("empty"))) << none.output;
  EXPECT_FALSE(fs::exists(dir.sub("export")));

  const ToolOutput format =
      run_tool("export_model", "--model_dir=" + dir.sub("empty") +
                                   " --export_dir=" + dir.sub("export") + " --format=tflite");
  EXPECT_EQ(format.exit_code, 2) << format.output;
  EXPECT_TRUE(format.contains("saved_model, onnx, safetensors")) << format.output;

  // An export directory that is a file.
  ASSERT_EQ(testing::train_tiny_model(dir.sub("model"), 1).exit_code, 0);
  { std::ofstream(dir.sub("file")) << "not a directory"; }
  const ToolOutput file = run_tool(
      "export_model", "--model_dir=" + dir.sub("model") + " --export_dir=" + dir.sub("file"));
  EXPECT_EQ(file.exit_code, 1) << file.output;
  EXPECT_TRUE(file.contains("cannot create the export directory " + dir.sub("file")))
      << file.output;

  const ToolOutput no_dir = run_tool("export_model", "--model_dir=" + dir.sub("empty"));
  EXPECT_EQ(no_dir.exit_code, 2) << no_dir.output;
  EXPECT_TRUE(no_dir.contains("--export_dir")) << no_dir.output;
}

}  // namespace
}  // namespace ic
