// The trainers' flag table seen from outside: the programs' --help shows each model's own
// defaults, a mistyped flag is refused with the nearest name, and the flags a real run records
// in its checkpoint parse back to the same options.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "runtime/inference_model.h"
#include "tools/tool_runner.h"
#include "train/flag_table.h"
#include "train/train_flags.h"

namespace ic {
namespace {

using testing::run_tool;
using testing::TempDir;
using testing::ToolOutput;

TEST(TrainerFlags, HelpShowsEachModelsOwnDefaults) {
  const struct {
    const char* program;
    std::vector<std::string> lines;
  } programs[] = {
      {"inception_v3", {"--train_batch_size (int32) [1024]", "--optimizer (choice) [RMS]"}},
      {"inception_v4",
       {"--train_batch_size (int32) [256]", "--learning_rate (double) [0.15]",
        "--use_annotated_bbox (bool) [true]"}},
      {"resnet50",
       {"--width (int32) [224]", "--optimizer (choice) [momentum]",
        "--precision (choice) [bfloat16]", "--num_classes (int32) [1000]"}},
  };
  for (const auto& p : programs) {
    const ToolOutput help = run_tool(p.program, "--help");
    EXPECT_EQ(help.exit_code, 0) << p.program;
    for (const std::string& line : p.lines) {
      EXPECT_TRUE(help.contains(line)) << p.program << " lacks " << line << "\n" << help.output;
    }
  }
}

TEST(TrainerFlags, AMistypedFlagIsRefusedWithTheNearestName) {
  const ToolOutput bad = run_tool("resnet50", "--trian_steps=1 --use_data=fake");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(
      bad.contains("unknown command-line flag '--trian_steps=1' (did you mean "
                   "--train_steps?)"))
      << bad.output;
  const ToolOutput choice = run_tool("inception_v4", "--mode=evaluate --use_data=fake");
  EXPECT_EQ(choice.exit_code, 2) << choice.output;
  EXPECT_TRUE(choice.contains("(allowed: train, eval, train_and_eval, summary)")) << choice.output;
}

TEST(TrainerFlags, TheFlagsARunRecordsInItsCheckpointParseBackToTheSameOptions) {
  TempDir dir;
  const std::string model_dir = dir.sub("model");
  const ToolOutput run = testing::train_tiny_model(
      model_dir, 1, "--checkpoint_format=safetensors --seed=3 --nomoving_average");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  Result<InferenceModel> model = load_for_inference(model_dir, "");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const std::string& recorded = model->meta.flags;
  for (const char* flag : {"--checkpoint_format=safetensors", "--seed=3", "--moving_average=false",
                           "--train_steps=1", "--depth_multiplier=0.1", "--mode=train"}) {
    EXPECT_NE(recorded.find(std::string(flag) + " "), std::string::npos) << flag << "\n"
                                                                         << recorded;
  }
  std::vector<std::string> words = {"inception_v3"};
  std::istringstream in(recorded);
  for (std::string word; in >> word;) words.push_back(word);
  EXPECT_EQ(words.size(), trainer_flags().size() + 1);
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());
  bool help = false;
  Result<RunOptions> again =
      parse_run_options("inception_v3", static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(flags_as_text(*again), recorded);
}

}  // namespace
}  // namespace ic
