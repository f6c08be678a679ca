// The lost-work cases of a real trainer: with the `checkpoint` index deleted, emptied or naming
// a damaged save, a rerun resumes from the newest usable save instead of starting over and
// overwriting the saves it did not see.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::run_command;
using testing::TempDir;
using testing::ToolOutput;

ToolOutput train_to(const std::string& model_dir, int steps) {
  return run_command("timeout 300 " + testing::bin_path("inception_v3") +
                     " --mode=train --use_data=fake --use_tpu=False --num_threads=1"
                     " --iterations=2 --train_batch_size=2 --width=75 --height=75"
                     " --depth_multiplier=0.1 --num_classes=11 --save_checkpoints_secs=0"
                     " --keep_checkpoint_max=5 --train_steps=" +
                     std::to_string(steps) + " --model_dir=" + model_dir);
}

TEST(LostWork, ADeletedOrEmptiedIndexResumesFromTheNewestSave) {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  ASSERT_EQ(train_to(model, 2).exit_code, 0);
  ASSERT_EQ(train_to(model, 4).exit_code, 0);
  std::filesystem::remove(model + "/checkpoint");
  ToolOutput rerun = train_to(model, 6);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_TRUE(rerun.contains("is missing but checkpoint files exist")) << rerun.output;
  EXPECT_TRUE(rerun.contains("(global step 4)")) << rerun.output;

  std::ofstream(model + "/checkpoint").flush();  // empty
  rerun = train_to(model, 8);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_TRUE(rerun.contains("(global step 6)")) << rerun.output;
}

TEST(LostWork, ADamagedNewestSaveFallsBackToThePreviousOne) {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  ASSERT_EQ(train_to(model, 2).exit_code, 0);
  ASSERT_EQ(train_to(model, 4).exit_code, 0);
  std::filesystem::resize_file(model + "/model.ckpt-4.data-00000-of-00001", 100);  // truncated
  ToolOutput rerun = train_to(model, 6);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_TRUE(rerun.contains("Warning: skipping checkpoint " + model + "/model.ckpt-4"))
      << rerun.output;
  EXPECT_TRUE(rerun.contains("(global step 2)")) << rerun.output;
}

}  // namespace
}  // namespace ic
