// A disk that fills up during a checkpoint write: the save fails with a message naming the file
// and the cause, the run stops with a non-zero exit, no partial file is left, and the previous
// checkpoint is intact and still the one `checkpoint` names. The model_dir is a small tmpfs
// (mounting one needs root, as the CI machine runs; elsewhere the test says it is skipped).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tools/small_disk.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::run_command;
using testing::SmallDisk;
using testing::TempDir;
using testing::ToolOutput;
using testing::train_tiny_model;

TEST(DiskFull, AFailedSaveLeavesThePreviousCheckpointIntactAndStopsWithTheCause) {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  // One checkpoint of this model is about 4.6 MB: room for one, not for a second beside it.
  SmallDisk disk(model, 7);
  if (!disk.mounted()) GTEST_SKIP() << "skipped: cannot mount a tmpfs here (needs root)";
  ToolOutput first = train_tiny_model(model, 2);
  ASSERT_EQ(first.exit_code, 0) << first.output;

  ToolOutput full = train_tiny_model(model, 4);
  EXPECT_EQ(full.exit_code, 1) << full.output;
  EXPECT_TRUE(full.contains("No space left on device")) << full.output;
  EXPECT_TRUE(full.contains(model + "/model.ckpt-4")) << full.output;
  for (const auto& entry : std::filesystem::directory_iterator(model)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos)
        << "left behind: " << entry.path();
    EXPECT_EQ(entry.path().filename().string().find("ckpt-4"), std::string::npos)
        << "left behind: " << entry.path();
  }
  ToolOutput inspect =
      run_command(testing::bin_path("inspect_checkpoint") + " --model_dir=" + model);
  EXPECT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_TRUE(inspect.contains(model + "/model.ckpt-2")) << inspect.output;
}

}  // namespace
}  // namespace ic
