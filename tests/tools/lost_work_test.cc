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
using testing::train_tiny_model;

TEST(LostWork, ADeletedOrEmptiedIndexResumesFromTheNewestSave) {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  ASSERT_EQ(train_tiny_model(model, 2).exit_code, 0);
  ASSERT_EQ(train_tiny_model(model, 4).exit_code, 0);
  std::filesystem::remove(model + "/checkpoint");
  ToolOutput rerun = train_tiny_model(model, 6);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_TRUE(rerun.contains("is missing but checkpoint files exist")) << rerun.output;
  EXPECT_TRUE(rerun.contains("(global step 4)")) << rerun.output;

  std::ofstream(model + "/checkpoint").flush();  // empty
  rerun = train_tiny_model(model, 8);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_TRUE(rerun.contains("(global step 6)")) << rerun.output;
}

TEST(LostWork, ADamagedNewestSaveFallsBackToThePreviousOne) {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  ASSERT_EQ(train_tiny_model(model, 2).exit_code, 0);
  ASSERT_EQ(train_tiny_model(model, 4).exit_code, 0);
  std::filesystem::resize_file(model + "/model.ckpt-4.data-00000-of-00001", 100);  // truncated
  ToolOutput rerun = train_tiny_model(model, 6);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_TRUE(rerun.contains("Warning: skipping checkpoint " + model + "/model.ckpt-4"))
      << rerun.output;
  EXPECT_TRUE(rerun.contains("(global step 2)")) << rerun.output;
}

}  // namespace
}  // namespace ic
