// Bit-exact resume with the real trainer on real TFRecords (make_fake_imagenet): a run stopped
// at step N and restarted from its checkpoint ends with exactly the tensors of the same run done
// straight through -- every weight, optimizer slot, moving average and the global step -- when
// it stops off an --iterations boundary (--train_steps), when SIGTERM stops it mid-loop, on fake
// data, and under `mpirun -np 2` (each replica's input stream resumes from its own position).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "io/checkpoint_dir.h"
#include "tools/background_test_util.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::run_command;
using testing::run_tool;
using testing::TempDir;
using testing::ToolOutput;

std::string make_data(const TempDir& dir) {
  const std::string data = dir.sub("data");
  const ToolOutput made =
      run_tool("make_fake_imagenet", "--output_dir=" + data +
                                         " --num_train_images=64 --num_validation_images=8 "
                                         "--train_shards=4 --validation_shards=1 --image_size=48 "
                                         "--num_classes=10 --num_threads=1");
  EXPECT_EQ(made.exit_code, 0) << made.output;
  return data;
}

// Interleaved files, a shuffle buffer larger than a batch, two decode threads: everything the
// input position has to carry. 64 images in batches of 4 (2 per replica under mpirun): an epoch
// is 16 steps single-process, so 24 steps cross an epoch boundary.
std::string train_flags(const std::string& data, const std::string& model) {
  return "--mode=train --data_dir=" + data + " --model_dir=" + model +
         " --use_tpu=False --num_threads=1 --iterations=5 --train_batch_size=4 --width=75 "
         "--height=75 --depth_multiplier=0.1 --num_classes=11 --save_checkpoints_secs=0 "
         "--num_parallel_calls=2 --num_files_infeed=3 --followup_shuffle_buffer_size=20";
}

ToolOutput train(const std::string& flags, int steps) {
  return run_command("timeout 300 " + testing::bin_path("inception_v3") + " " + flags +
                     " --train_steps=" + std::to_string(steps));
}

std::string mpirun(const std::string& flags, int steps) {
  return "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 timeout 300 mpirun -np 2 --oversubscribe "
         "--allow-run-as-root " +
         testing::bin_path("inception_v3") + " " + flags +
         " --train_steps=" + std::to_string(steps);
}

// Every tensor of the two checkpoints byte for byte, and the input positions they saved.
void expect_identical(const std::string& straight_path, const std::string& resumed_path) {
  Result<CheckpointContents> straight = read_checkpoint(straight_path);
  Result<CheckpointContents> resumed = read_checkpoint(resumed_path);
  ASSERT_TRUE(straight.ok()) << straight.status().message();
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  ASSERT_EQ(straight->tensors.size(), resumed->tensors.size());
  size_t compared = 0, differing = 0;
  for (const TensorEntry& tensor : straight->tensors) {
    const TensorEntry* other = resumed->find(tensor.name);
    ASSERT_NE(other, nullptr) << tensor.name;
    EXPECT_EQ(tensor.shape, other->shape) << tensor.name;
    if (tensor.bytes != other->bytes) {
      if (++differing <= 5) ADD_FAILURE() << tensor.name << " differs";
    }
    ++compared;
  }
  EXPECT_EQ(differing, 0u) << "of " << compared << " tensors";
  EXPECT_GT(compared, 100u);
  // The input streams stand at the same place too; the run ids differ (two runs).
  for (const auto& [key, value] : straight->metadata) {
    if (key.rfind("input_position/", 0) == 0) {
      EXPECT_EQ(resumed->metadata[key], value) << key;
    }
  }
  EXPECT_NE(straight->metadata[kRunIdKey], resumed->metadata[kRunIdKey]);
}

TEST(ExactResume, StoppedOffAnIterationsBoundaryAndResumedEqualsStraight) {
  TempDir dir;
  const std::string data = make_data(dir);
  const std::string straight = dir.sub("straight"), resumed = dir.sub("resumed");
  ToolOutput run = train(train_flags(data, straight), 24);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = train(train_flags(data, resumed), 12);  // 12 is not a multiple of --iterations=5
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = train(train_flags(data, resumed), 24);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(run.contains("Restoring parameters from")) << run.output;
  EXPECT_FALSE(run.contains("afresh")) << run.output;
  expect_identical(straight + "/model.ckpt-24", resumed + "/model.ckpt-24");
}

TEST(ExactResume, WithoutTheInputPositionTheResumeIsNotExact) {
  // The comparison above can fail: the same resume with the input stream restarted (a changed
  // shuffle buffer makes the pipeline start afresh, with a notice) ends with other weights.
  TempDir dir;
  const std::string data = make_data(dir);
  const std::string straight = dir.sub("straight"), resumed = dir.sub("resumed");
  ASSERT_EQ(train(train_flags(data, straight), 16).exit_code, 0);
  ASSERT_EQ(train(train_flags(data, resumed) + " --followup_shuffle_buffer_size=20", 8).exit_code,
            0);
  const ToolOutput run =
      train(train_flags(data, resumed) + " --followup_shuffle_buffer_size=21", 16);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(run.contains("starts afresh")) << run.output;
  EXPECT_TRUE(run.contains("shuffle buffer 20 then, 21 now")) << run.output;
  Result<CheckpointContents> a = read_checkpoint(straight + "/model.ckpt-16");
  Result<CheckpointContents> b = read_checkpoint(resumed + "/model.ckpt-16");
  ASSERT_TRUE(a.ok() && b.ok());
  size_t differing = 0;
  for (const TensorEntry& tensor : a->tensors) {
    const TensorEntry* other = b->find(tensor.name);
    differing += other == nullptr || other->bytes != tensor.bytes;
  }
  EXPECT_GT(differing, 0u);
}

TEST(ExactResume, SigtermMidLoopThenResumeEqualsStraight) {
  TempDir dir;
  const std::string data = make_data(dir);
  const std::string stopped = dir.sub("stopped"), straight = dir.sub("straight");
  const std::string log_path = dir.sub("stopped.log");
  // Polled every 2 ms, so that the signal lands within the training loop that logged step 10.
  testing::Background trainer =
      testing::Background::shell("exec " + testing::bin_path("inception_v3") + " " +
                                     train_flags(data, stopped) + " --train_steps=100000",
                                 log_path);
  ASSERT_TRUE(trainer.started());
  ASSERT_TRUE(trainer.wait_for("\nstep = 10,", 300, std::chrono::milliseconds(2)))
      << "ended early or logged no step 10:\n"
      << trainer.log();
  ASSERT_EQ(kill(trainer.pid(), SIGTERM), 0);
  ASSERT_NE(trainer.wait_exit(300), -1) << trainer.log();
  ASSERT_TRUE(trainer.log().find("Stop requested by signal 15") != std::string::npos)
      << trainer.log();
  Result<std::optional<std::string>> latest = latest_checkpoint(stopped);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  const int64_t step = checkpoint_step(**latest).value_or(-1);
  ASSERT_GE(step, 10);
  const int64_t target = step + 8;
  ToolOutput run = train(train_flags(data, stopped), static_cast<int>(target));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = train(train_flags(data, straight), static_cast<int>(target));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  SCOPED_TRACE("stopped at step " + std::to_string(step));
  expect_identical(checkpoint_prefix(straight, target), checkpoint_prefix(stopped, target));
}

TEST(ExactResume, FakeDataResumesExactly) {
  TempDir dir;
  const std::string flags =
      "--mode=train --use_data=fake --use_tpu=False --num_threads=1 --iterations=3 "
      "--train_batch_size=2 --width=75 --height=75 --depth_multiplier=0.1 --num_classes=11 "
      "--save_checkpoints_secs=0 --model_dir=";
  ASSERT_EQ(train(flags + dir.sub("straight"), 10).exit_code, 0);
  ASSERT_EQ(train(flags + dir.sub("resumed"), 4).exit_code, 0);
  ASSERT_EQ(train(flags + dir.sub("resumed"), 10).exit_code, 0);
  expect_identical(dir.sub("straight") + "/model.ckpt-10", dir.sub("resumed") + "/model.ckpt-10");
}

TEST(ExactResume, UnderMpirunTwoReplicasResumeExactly) {
  if (run_command("command -v mpirun").exit_code != 0) GTEST_SKIP() << "no mpirun";
  TempDir dir;
  const std::string data = make_data(dir);
  const std::string straight = dir.sub("straight"), resumed = dir.sub("resumed");
  ToolOutput run = run_command(mpirun(train_flags(data, straight), 24));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_command(mpirun(train_flags(data, resumed), 12));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_command(mpirun(train_flags(data, resumed), 24));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_FALSE(run.contains("afresh")) << run.output;
  Result<CheckpointContents> saved = read_checkpoint(resumed + "/model.ckpt-24");
  ASSERT_TRUE(saved.ok());
  EXPECT_TRUE(saved->metadata.count("input_position/rank_0"));
  EXPECT_TRUE(saved->metadata.count("input_position/rank_1"));
  expect_identical(straight + "/model.ckpt-24", resumed + "/model.ckpt-24");
}

}  // namespace
}  // namespace ic
