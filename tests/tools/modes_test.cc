// The run modes with the real inception_v3 binary on fake data and a tiny network:
// a restarted train_and_eval continues from its checkpoint, --mode=eval waits for
// checkpoints and stops after the one at --train_steps, evaluation reads the EMA shadows of
// the checkpoint it evaluates, and SIGTERM leaves a checkpoint and exit code 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "io/checkpoint_dir.h"
#include "io/event_reader.h"
#include "tools/background_test_util.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::latest_step;

using testing::run_tool;
using testing::TempDir;
using testing::ToolOutput;

// Tiny and fast: 75x75 images, depth multiplier 0.1, 10 classes, batch 2; checkpoints only
// at the end of each training call.
std::string tiny_flags(const std::string& model_dir) {
  return "--use_data=fake --use_tpu=False --iterations=2 --train_batch_size=2 "
         "--eval_batch_size=2 --eval_total_size=2 --width=75 --height=75 "
         "--depth_multiplier=0.1 --num_classes=10 --save_checkpoints_secs=0 --num_threads=1 "
         "--model_dir=" +
         model_dir;
}

// Tags of the scalars in the event files directly in `dir`.
std::set<std::string> scalar_tags(const std::string& dir) {
  std::set<std::string> tags;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) != 0) continue;
    auto events = read_scalar_events(entry.path().string());
    if (!events.ok()) continue;
    for (const ScalarEvent& e : *events) tags.insert(e.tag);
  }
  return tags;
}

// The number after "loss = " in the eval dict line.
double eval_loss(const ToolOutput& out) {
  const size_t at = out.output.find("Saving dict for global step");
  if (at == std::string::npos) return -1;
  const size_t loss = out.output.find("loss = ", at);
  return std::stod(out.output.substr(loss + 7));
}

TEST(Modes, RestartedTrainAndEvalContinuesFromItsCheckpoint) {
  TempDir dir;
  ToolOutput first =
      run_tool("inception_v3", "--mode=train --train_steps=2 " + tiny_flags(dir.path()));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_TRUE(first.contains("step = 2, loss = ")) << first.output;
  EXPECT_TRUE(first.contains("global_step/sec: ")) << first.output;
  EXPECT_TRUE(first.contains("examples/sec: ")) << first.output;
  EXPECT_EQ(latest_step(dir.path()), 2);

  ToolOutput second = run_tool("inception_v3",
                               "--mode=train_and_eval --train_steps=4 "
                               "--train_steps_per_eval=2 " +
                                   tiny_flags(dir.path()));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(second.contains("(global step 2)")) << second.output;
  EXPECT_FALSE(second.contains("Starting training cycle 0.")) << second.output;
  EXPECT_TRUE(second.contains("Starting training cycle 1.")) << second.output;
  EXPECT_TRUE(second.contains("Saving dict for global step 4: accuracy = ")) << second.output;
  EXPECT_FALSE(second.contains("step = 6")) << second.output;
  EXPECT_EQ(latest_step(dir.path()), 4);

  ToolOutput third = run_tool("inception_v3",
                              "--mode=train_and_eval --train_steps=4 "
                              "--train_steps_per_eval=2 " +
                                  tiny_flags(dir.path()));
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_TRUE(third.contains("Skipping training since max_steps has already saved."));
  EXPECT_FALSE(third.contains("Starting training cycle")) << third.output;
  // TensorBoard: train scalars in model_dir, eval scalars in model_dir/eval.
  EXPECT_EQ(scalar_tags(dir.path()),
            (std::set<std::string>{"current_epoch", "examples/sec", "global_step/sec",
                                   "learning_rate", "loss"}));
  EXPECT_EQ(scalar_tags(dir.sub("eval")),
            (std::set<std::string>{"accuracy", "accuracy@5", "loss"}));
}

// TensorFlow's format is the default; a model_dir may hold either format, and a run resumes
// from whichever `checkpoint` names.
TEST(Modes, ResumesAndEvaluatesFromEitherCheckpointFormat) {
  namespace fs = std::filesystem;
  TempDir dir;
  ToolOutput first =
      run_tool("inception_v3", "--mode=train --train_steps=2 " + tiny_flags(dir.path()) +
                                   " --checkpoint_format=safetensors");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_TRUE(fs::exists(dir.sub("model.ckpt-2.safetensors")));
  EXPECT_FALSE(fs::exists(dir.sub("model.ckpt-2.index")));

  ToolOutput second =
      run_tool("inception_v3", "--mode=train --train_steps=4 " + tiny_flags(dir.path()));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(second.contains("Restoring parameters from " + dir.sub("model.ckpt-2.safetensors") +
                              " (global step 2)"))
      << second.output;
  EXPECT_TRUE(fs::exists(dir.sub("model.ckpt-4.index")));
  EXPECT_TRUE(fs::exists(dir.sub("model.ckpt-4.data-00000-of-00001")));
  EXPECT_FALSE(fs::exists(dir.sub("model.ckpt-4.safetensors")));

  // The bundle evaluates exactly as the same tensors written as safetensors.
  const std::string eval_flags = "--mode=eval --train_steps=4 --eval_timeout=0 ";
  ToolOutput from_tf = run_tool("inception_v3", eval_flags + tiny_flags(dir.path()));
  ASSERT_EQ(from_tf.exit_code, 0) << from_tf.output;
  EXPECT_TRUE(from_tf.contains("Found new checkpoint at " + dir.sub("model.ckpt-4")))
      << from_tf.output;
  auto bundle = read_checkpoint(dir.sub("model.ckpt-4"));
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  std::vector<TensorView> views;
  for (const TensorEntry& t : bundle->tensors) {
    views.push_back({t.name, t.dtype, t.shape, t.bytes.data()});
  }
  ASSERT_TRUE(
      save_checkpoint(dir.sub("copy"), 4, bundle->metadata, views, 5, CheckpointFormat::safetensors)
          .ok());
  ToolOutput from_safetensors = run_tool("inception_v3", eval_flags + tiny_flags(dir.sub("copy")));
  ASSERT_EQ(from_safetensors.exit_code, 0) << from_safetensors.output;
  EXPECT_GT(eval_loss(from_tf), 0) << from_tf.output;
  EXPECT_DOUBLE_EQ(eval_loss(from_safetensors), eval_loss(from_tf)) << from_safetensors.output;

  // Resuming from the bundle, writing safetensors again.
  ToolOutput third =
      run_tool("inception_v3", "--mode=train --train_steps=6 " + tiny_flags(dir.path()) +
                                   " --checkpoint_format=safetensors");
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_TRUE(
      third.contains("Restoring parameters from " + dir.sub("model.ckpt-4") + " (global step 4)"))
      << third.output;
  EXPECT_EQ(latest_step(dir.path()), 6);
  EXPECT_TRUE(fs::exists(dir.sub("model.ckpt-6.safetensors")));
}

// --warm_start_from: a fresh run with another class count takes every variable whose shape
// still fits from another run's checkpoint.
TEST(Modes, WarmStartFromAnotherClassCountLoadsWhatFits) {
  TempDir dir;
  ASSERT_EQ(run_tool("inception_v3", "--mode=train --train_steps=2 " + tiny_flags(dir.sub("ten")))
                .exit_code,
            0);
  const std::string twelve = tiny_flags(dir.sub("twelve")) + " --num_classes=12";
  ToolOutput warm =
      run_tool("inception_v3", "--mode=train --train_steps=2 " + twelve +
                                   " --warm_start_from=" + dir.sub("ten/model.ckpt-2"));
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  EXPECT_TRUE(warm.contains("Warm-starting from " + dir.sub("ten/model.ckpt-2") + ": "))
      << warm.output;
  EXPECT_TRUE(warm.contains("  loaded InceptionV3/Conv2d_1a_3x3/weights\n")) << warm.output;
  EXPECT_TRUE(warm.contains(
      "  loaded InceptionV3/Mixed_7c/Branch_3/Conv2d_0b_1x1/BatchNorm/moving_variance\n"))
      << warm.output;
  EXPECT_TRUE(
      warm.contains("  fresh  InceptionV3/Logits/Conv2d_1c_1x1/biases (the checkpoint's is "
                    "float32 [10], the model's float32 [12])"))
      << warm.output;
  EXPECT_FALSE(warm.contains("Restoring parameters")) << warm.output;
  // global_step starts at 0: two steps were trained, not none.
  EXPECT_TRUE(warm.contains("step = 2, loss = ")) << warm.output;
  EXPECT_EQ(latest_step(dir.sub("twelve")), 2);

  // Once the run has its own checkpoint, it resumes from that instead.
  ToolOutput again = run_tool("inception_v3", "--mode=train --train_steps=4 " + twelve +
                                                  " --warm_start_from=" + dir.sub("ten"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(again.contains("Not warm-starting from " + dir.sub("ten"))) << again.output;
  EXPECT_TRUE(again.contains("(global step 2)")) << again.output;

  // A directory resolves to its latest checkpoint; a path with no checkpoint is an error.
  ToolOutput from_dir =
      run_tool("inception_v3", "--mode=train --train_steps=1 " + tiny_flags(dir.sub("eleven")) +
                                   " --num_classes=11 --warm_start_from=" + dir.sub("ten"));
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.output;
  EXPECT_TRUE(from_dir.contains("Warm-starting from " + dir.sub("ten/model.ckpt-2") + ": "))
      << from_dir.output;
  ToolOutput missing =
      run_tool("inception_v3", "--mode=train --train_steps=1 " + tiny_flags(dir.sub("none")) +
                                   " --warm_start_from=" + dir.sub("nothing"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(missing.contains(dir.sub("nothing"))) << missing.output;
}

// A damaged checkpoint stops the run with the file and tensor named, never a silent restart.
TEST(Modes, CorruptCheckpointIsRefusedNamingFileAndTensor) {
  TempDir dir;
  ASSERT_EQ(
      run_tool("inception_v3", "--mode=train --train_steps=2 " + tiny_flags(dir.path())).exit_code,
      0);
  const std::string data = dir.sub("model.ckpt-2.data-00000-of-00001");
  {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekg(1000);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x20);
    f.seekp(1000);
    f.write(&c, 1);
  }
  ToolOutput resumed =
      run_tool("inception_v3", "--mode=train --train_steps=4 " + tiny_flags(dir.path()));
  EXPECT_EQ(resumed.exit_code, 1) << resumed.output;
  EXPECT_TRUE(resumed.contains(data + ": tensor ")) << resumed.output;
  EXPECT_TRUE(resumed.contains("CRC-32C mismatch")) << resumed.output;
  EXPECT_EQ(latest_step(dir.path()), 2);  // nothing was overwritten
}

TEST(Modes, IncompatibleModelDirIsRefusedWithBothDescriptions) {
  TempDir dir;
  ASSERT_EQ(
      run_tool("inception_v3", "--mode=train --train_steps=1 " + tiny_flags(dir.path())).exit_code,
      0);
  ToolOutput other = run_tool("inception_v3", "--mode=train --train_steps=2 " +
                                                  tiny_flags(dir.path()) + " --num_classes=12");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_TRUE(other.contains("holds inception_v3, 10 classes")) << other.output;
  EXPECT_TRUE(other.contains("this run is inception_v3, 12 classes")) << other.output;
}

TEST(Modes, EvalWaitsForCheckpointsAndStopsAfterTrainSteps) {
  TempDir dir;
  // The evaluator starts first, on an empty model_dir, and follows it.
  const std::string eval_cmd = testing::bin_path("inception_v3") +
                               " --mode=eval --train_steps=4 --eval_timeout=300 " +
                               tiny_flags(dir.path()) + " 2>&1";
  FILE* eval = popen(eval_cmd.c_str(), "r");
  ASSERT_NE(eval, nullptr);
  // Training starts only once the evaluator says it is waiting.
  std::string output;
  char line[4096];
  while (output.find("Waiting for new checkpoint at") == std::string::npos &&
         std::fgets(line, sizeof line, eval) != nullptr) {
    output += line;
  }
  ToolOutput train =
      run_tool("inception_v3", "--mode=train --train_steps=4 " + tiny_flags(dir.path()));
  ASSERT_EQ(train.exit_code, 0) << train.output;
  size_t n;
  while ((n = std::fread(line, 1, sizeof line, eval)) > 0) output.append(line, n);
  const int status = pclose(eval);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_NE(output.find("Waiting for new checkpoint at " + dir.path()), std::string::npos)
      << output;
  EXPECT_NE(output.find("Saving dict for global step 4: accuracy = "), std::string::npos) << output;
  EXPECT_NE(output.find("Evaluation finished after training step 4"), std::string::npos) << output;

  // With nothing new to evaluate it gives up after --eval_timeout seconds.
  TempDir empty;
  ToolOutput timeout =
      run_tool("inception_v3", "--mode=eval --eval_timeout=1 " + tiny_flags(empty.path()));
  EXPECT_EQ(timeout.exit_code, 0) << timeout.output;
  EXPECT_TRUE(timeout.contains("1 seconds without new checkpoints have elapsed")) << timeout.output;
}

// Rewrites model_dir's checkpoint into out_dir with some tensors zeroed.
void copy_checkpoint_zeroing(const std::string& model_dir, const std::string& out_dir,
                             bool zero_raw_weights, bool zero_ema) {
  auto latest = latest_checkpoint(model_dir);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  auto file = read_checkpoint(**latest);
  ASSERT_TRUE(file.ok()) << file.status().message();
  std::vector<TensorView> views;
  for (TensorEntry& t : file->tensors) {
    const bool ema = t.name.find("/ExponentialMovingAverage") != std::string::npos;
    const bool slot = t.name.find("/RMSProp") != std::string::npos;
    const bool stat = t.name.find("moving_") != std::string::npos;
    if (t.name != "global_step" && !slot && !stat &&
        ((ema && zero_ema) || (!ema && zero_raw_weights))) {
      std::fill(t.bytes.begin(), t.bytes.end(), '\0');
    }
    views.push_back({t.name, t.dtype, t.shape, t.bytes.data()});
  }
  const int64_t step = checkpoint_step(**latest).value();
  ASSERT_TRUE(save_checkpoint(out_dir, step, file->metadata, views, 5).ok());
}

TEST(Modes, EvaluationUsesTheEvaluatedCheckpointsEmaWeights) {
  TempDir dir;
  ASSERT_EQ(
      run_tool("inception_v3", "--mode=train --train_steps=2 " + tiny_flags(dir.path())).exit_code,
      0);
  const std::string eval_flags = "--mode=eval --train_steps=2 --eval_timeout=0 ";
  ToolOutput original = run_tool("inception_v3", eval_flags + tiny_flags(dir.path()));
  ASSERT_EQ(original.exit_code, 0) << original.output;
  const double loss = eval_loss(original);
  ASSERT_GT(loss, 0) << original.output;

  // Raw weights zeroed, shadows intact: the same evaluation.
  copy_checkpoint_zeroing(dir.path(), dir.sub("raw_zeroed"), true, false);
  ToolOutput raw_zeroed = run_tool("inception_v3", eval_flags + tiny_flags(dir.sub("raw_zeroed")));
  ASSERT_EQ(raw_zeroed.exit_code, 0) << raw_zeroed.output;
  EXPECT_DOUBLE_EQ(eval_loss(raw_zeroed), loss) << raw_zeroed.output;

  // Shadows zeroed: a different model is evaluated.
  copy_checkpoint_zeroing(dir.path(), dir.sub("ema_zeroed"), false, true);
  ToolOutput ema_zeroed = run_tool("inception_v3", eval_flags + tiny_flags(dir.sub("ema_zeroed")));
  ASSERT_EQ(ema_zeroed.exit_code, 0) << ema_zeroed.output;
  EXPECT_NE(eval_loss(ema_zeroed), loss) << ema_zeroed.output;

  // --moving_average=false evaluates the raw weights instead: zeroed shadows do not matter.
  ToolOutput raw =
      run_tool("inception_v3", eval_flags + tiny_flags(dir.path()) + " --moving_average=false");
  ToolOutput raw_again = run_tool(
      "inception_v3", eval_flags + tiny_flags(dir.sub("ema_zeroed")) + " --moving_average=false");
  ASSERT_EQ(raw.exit_code, 0) << raw.output;
  EXPECT_NE(eval_loss(raw), loss) << raw.output;
  EXPECT_DOUBLE_EQ(eval_loss(raw_again), eval_loss(raw)) << raw_again.output;
}

TEST(Modes, SigtermWritesACheckpointAndExitsCleanly) {
  TempDir dir;
  const std::string log_path = dir.sub("log.txt");
  testing::Background trainer(
      "inception_v3",
      "--mode=train --train_steps=100000 --iterations=1 " + tiny_flags(dir.sub("model")), log_path);
  ASSERT_TRUE(trainer.started());
  // Wait for the first logged steps, then ask it to stop.
  ASSERT_TRUE(trainer.wait_for("step = 2,", 300, std::chrono::milliseconds(100))) << trainer.log();
  ASSERT_EQ(kill(trainer.pid(), SIGTERM), 0);
  const int status = trainer.wait_exit(300);
  const std::string log = trainer.log();
  ASSERT_NE(status, -1) << log;
  ASSERT_TRUE(WIFEXITED(status)) << log;
  EXPECT_EQ(WEXITSTATUS(status), 0) << log;
  EXPECT_NE(log.find("Stop requested by signal 15"), std::string::npos) << log;
  const int64_t step = latest_step(dir.sub("model"));
  EXPECT_GE(step, 1) << log;
  EXPECT_LT(step, 100000);
  EXPECT_NE(log.find("Saving checkpoints for " + std::to_string(step)), std::string::npos) << log;
}

}  // namespace
}  // namespace ic
