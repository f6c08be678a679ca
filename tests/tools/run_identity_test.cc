// A trainer never replaces another run's checkpoint of the same step: a model_dir whose newest
// save (step 4, another run's, unusable: a NaN weight) is skipped on resume has the run resume
// from its own step 2 -- and then refuse to write its step 4 over the other run's, naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>

#include "io/checkpoint_dir.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::TempDir;
using testing::ToolOutput;
using testing::train_tiny_model;

TEST(RunIdentity, ARunDoesNotReplaceAnotherRunsCheckpointOfTheSameStep) {
  TempDir dir;
  const std::string ours = dir.sub("ours"), theirs = dir.sub("theirs");
  ToolOutput run = train_tiny_model(ours, 2);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = train_tiny_model(theirs, 4);
  ASSERT_EQ(run.exit_code, 0) << run.output;

  // Their step 4, with a NaN weight, lands in our model_dir as the newest save.
  Result<CheckpointContents> other = read_checkpoint(theirs + "/model.ckpt-4");
  ASSERT_TRUE(other.ok()) << other.status().message();
  const std::string their_run = other->metadata[kRunIdKey];
  ASSERT_FALSE(their_run.empty());
  std::vector<TensorView> views;
  for (TensorEntry& tensor : other->tensors) {
    if (views.empty() && tensor.dtype == DType::f32 && !tensor.bytes.empty()) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(tensor.bytes.data(), &nan, sizeof(nan));
    }
    views.push_back(TensorView{tensor.name, tensor.dtype, tensor.shape, tensor.bytes.data()});
  }
  ASSERT_TRUE(save_checkpoint(ours, 4, other->metadata, views).ok());

  run = train_tiny_model(ours, 4);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_TRUE(run.contains("skipping checkpoint")) << run.output;  // resumed from step 2
  EXPECT_TRUE(run.contains(ours + "/model.ckpt-4: a checkpoint of the same step from another run"))
      << run.output;
  Result<CheckpointContents> kept = read_checkpoint(ours + "/model.ckpt-4");
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(kept->metadata[kRunIdKey], their_run);  // theirs, untouched

  // Resuming keeps a run's id: our own next save of step 6 is accepted, and carries it.
  Result<CheckpointContents> step2 = read_checkpoint(ours + "/model.ckpt-2");
  ASSERT_TRUE(step2.ok());
  run = train_tiny_model(theirs, 6);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  Result<CheckpointContents> step6 = read_checkpoint(theirs + "/model.ckpt-6");
  ASSERT_TRUE(step6.ok());
  EXPECT_EQ(step6->metadata[kRunIdKey], their_run);
  EXPECT_NE(step2->metadata[kRunIdKey], their_run);
}

}  // namespace
}  // namespace ic
