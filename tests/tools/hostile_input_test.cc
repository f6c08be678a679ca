// The real programs against hostile input and hostile command lines: each must stop with a
// one-line error that names the file (and record) or flag and the problem, and a non-zero exit
// code; never hang, crash, abort on an exception, or print a result computed from nonsense.
// Also: a second stop signal (or a step boundary that never comes) ends a trainer at once, and
// two trainers cannot write one model_dir.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "io/checkpoint_dir.h"
#include "io/safetensors.h"
#include "tools/background_test_util.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::Background;

namespace fs = std::filesystem;
using testing::run_bounded;
using testing::run_tool;
using testing::TempDir;
using testing::ToolOutput;

// Tiny network and batches; `extra` after them wins.
std::string tiny(const std::string& data_dir, const std::string& model_dir,
                 const std::string& extra = "") {
  return "--data_dir=" + data_dir + " --model_dir=" + model_dir +
         " --use_tpu=False --num_threads=1 --iterations=2 --train_batch_size=2 "
         "--eval_batch_size=2 --width=75 --height=75 --depth_multiplier=0.1 --num_classes=11 "
         "--save_checkpoints_secs=0 --num_parallel_calls=1 " +
         extra;
}

// Fake ImageNet shards with labels 1..num_classes.
void make_data(const std::string& dir, int num_classes) {
  ToolOutput made =
      run_tool("make_fake_imagenet", "--output_dir=" + dir +
                                         " --num_train_images=16 --num_validation_images=4 "
                                         "--train_shards=2 --validation_shards=1 --image_size=40 "
                                         "--num_classes=" +
                                         std::to_string(num_classes) + " --num_threads=1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
}

// `timeout` keeps a regression (a hang) from stalling the suite.
// ---- silently wrong ----------------------------------------------------------------------------

TEST(HostileInput, TrainingRefusesLabelsOutsideNumClasses) {
  TempDir dir;
  make_data(dir.sub("data"), 50);  // labels 1..50, trained with --num_classes=11
  ToolOutput out = run_bounded(
      "inception_v3", "--mode=train --train_steps=4 " + tiny(dir.sub("data"), dir.sub("model")));
  EXPECT_NE(out.exit_code, 0) << out.output;
  EXPECT_TRUE(out.contains("train-0000")) << out.output;
  EXPECT_TRUE(out.contains("record at byte ")) << out.output;
  EXPECT_TRUE(out.contains("is outside [0, 11) for --num_classes=11")) << out.output;
  EXPECT_FALSE(out.contains("step = 4")) << out.output;
}

TEST(HostileInput, EvaluationOverZeroImagesIsAnError) {
  TempDir dir;
  make_data(dir.sub("data"), 10);
  int run = 0;
  for (const char* content : {"", "not a tfrecord file, some text instead"}) {
    std::ofstream(dir.sub("data/validation-00000-of-00001"), std::ios::trunc) << content;
    const std::string model = dir.sub("model" + std::to_string(run++));
    ToolOutput out = run_bounded("inception_v3",
                                 "--mode=train_and_eval --train_steps=2 "
                                 "--train_steps_per_eval=2 " +
                                     tiny(dir.sub("data"), model));
    EXPECT_NE(out.exit_code, 0) << out.output;
    EXPECT_TRUE(out.contains("evaluation found no image to score")) << out.output;
    EXPECT_FALSE(out.contains("Saving dict for global step")) << out.output;
  }
}

// ---- hangs -------------------------------------------------------------------------------------

TEST(HostileInput, TrainingOverUnreadableShardsStopsInsteadOfWaiting) {
  TempDir dir;
  fs::create_directories(dir.sub("data"));
  std::ofstream(dir.sub("data/train-00000-of-00002")) << "";
  std::ofstream(dir.sub("data/train-00001-of-00002")) << "garbage, not a TFRecord";
  ToolOutput out =
      run_bounded("inception_v3",
                  "--mode=train --train_steps=2 " + tiny(dir.sub("data"), dir.sub("model")), 120);
  EXPECT_NE(out.exit_code, 124) << "timed out: the trainer waited forever\n" << out.output;
  EXPECT_NE(out.exit_code, 0) << out.output;
  EXPECT_TRUE(out.contains("none of the 2 input files holds a readable record")) << out.output;
}

TEST(HostileInput, TooManyBadInputsInALoopStopTraining) {
  TempDir dir;
  make_data(dir.sub("data"), 10);
  // The data of the second record of one shard is damaged (its data CRC fails): 1 of 16
  // records, a fraction well above the default threshold of 0.01.
  const std::string shard = dir.sub("data/train-00000-of-00002");
  std::string bytes;
  {
    std::ifstream in(shard, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto length_at = [&](size_t at) {
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[at + i]);
    return length;
  };
  const size_t second = 12 + length_at(0) + 4;
  ASSERT_LT(second + 12 + length_at(second) / 2, bytes.size());
  bytes[second + 12 + length_at(second) / 2] ^= 0x5a;
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  ToolOutput out = run_bounded(
      "inception_v3", "--mode=train --train_steps=8 " + tiny(dir.sub("data"), dir.sub("model")));
  EXPECT_NE(out.exit_code, 0) << out.output;
  EXPECT_TRUE(out.contains("--max_bad_input_fraction=0.01")) << out.output;
  EXPECT_TRUE(out.contains("skipped ")) << out.output;  // the loop's log line counts them

  // Allowed with a higher threshold: the loop lines count the skipped inputs.
  ToolOutput tolerant = run_bounded(
      "inception_v3", "--mode=train --train_steps=4 " +
                          tiny(dir.sub("data"), dir.sub("model2"), "--max_bad_input_fraction=0.9"));
  EXPECT_EQ(tolerant.exit_code, 0) << tolerant.output;
  EXPECT_TRUE(tolerant.contains(" bad of ")) << tolerant.output;
}

// ---- crashes -----------------------------------------------------------------------------------

TEST(HostileInput, FlagsWhoseMemoryIsBeyondTheMachineAreRefused) {
  TempDir dir;
  make_data(dir.sub("data"), 10);
  // 100000 x 299 x 299 x 3 floats x 4 batches: 429 GB, beyond any machine this runs on.
  ToolOutput batch = run_bounded(
      "inception_v3",
      "--mode=eval --eval_timeout=0 " + tiny(dir.sub("data"), dir.sub("model"),
                                             "--eval_batch_size=100000 --width=299 --height=299"),
      60);
  EXPECT_EQ(batch.exit_code, 2) << batch.output;
  EXPECT_TRUE(batch.contains("--eval_batch_size=100000 needs at least")) << batch.output;
  ToolOutput shuffle = run_bounded(
      "inception_v3",
      "--mode=train --train_steps=2 " +
          tiny(dir.sub("data"), dir.sub("model"), "--followup_shuffle_buffer_size=2000000000"));
  // The buffer never holds more records than the 16 the files hold, so this one fits (the
  // data layer's tests refuse one whose data-bounded size is beyond the memory limit).
  EXPECT_EQ(shuffle.exit_code, 0) << shuffle.output;
  EXPECT_FALSE(shuffle.contains("shuffle buffer of 2000000000 records")) << shuffle.output;
}

TEST(HostileInput, ThreadCountsBeyondTheCoresAreCapped) {
  TempDir dir;
  ToolOutput out =
      run_bounded("inception_v3", "--mode=train --train_steps=2 --use_data=fake " +
                                      tiny("", dir.sub("model"), "--num_threads=100000"));
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_TRUE(out.contains("--num_threads=100000 is more than the")) << out.output;
}

TEST(HostileInput, DirectoriesAndSymlinkLoopsAmongInputsAreErrors) {
  TempDir dir;
  make_data(dir.sub("data"), 10);
  fs::create_symlink(dir.sub("data/train-00009-of-00010"), dir.sub("data/train-00009-of-00010"));
  ToolOutput loop = run_bounded(
      "inception_v3", "--mode=train --train_steps=2 " + tiny(dir.sub("data"), dir.sub("model")));
  EXPECT_EQ(loop.exit_code, 1) << loop.output;
  EXPECT_TRUE(loop.contains("train-00009-of-00010")) << loop.output;
  EXPECT_FALSE(loop.contains("terminate called")) << loop.output;
  fs::remove(dir.sub("data/train-00009-of-00010"));
  fs::create_directories(dir.sub("data/train-00009-of-00010"));
  ToolOutput directory = run_bounded(
      "inception_v3", "--mode=train --train_steps=2 " + tiny(dir.sub("data"), dir.sub("model")));
  EXPECT_EQ(directory.exit_code, 1) << directory.output;
  EXPECT_TRUE(directory.contains("not a regular file")) << directory.output;

  // The converter's raw tree.
  fs::create_directories(dir.sub("raw/train/n01"));
  ToolOutput raw_made =
      run_tool("make_fake_imagenet", "--raw_layout --output_dir=" + dir.sub("raw2") +
                                         " --num_train_images=4 "
                                         "--num_validation_images=2 "
                                         "--num_classes=2 --num_threads=1");
  ASSERT_EQ(raw_made.exit_code, 0) << raw_made.output;
  fs::create_symlink(dir.sub("raw2/train/loop"), dir.sub("raw2/train/loop"));
  ToolOutput converted =
      run_bounded("imagenet_to_tfrecord", "--raw_data_dir=" + dir.sub("raw2") +
                                              " --local_scratch_dir=" + dir.sub("out") +
                                              " --train_shards=1 "
                                              "--validation_shards=1");
  EXPECT_EQ(converted.exit_code, 1) << converted.output;
  EXPECT_TRUE(converted.contains("raw2/train/loop")) << converted.output;
}

TEST(HostileInput, TheConverterSkipsAndReportsImagesClaimingHugeDimensions) {
  TempDir dir;
  ToolOutput raw_made =
      run_tool("make_fake_imagenet", "--raw_layout --output_dir=" + dir.sub("raw") +
                                         " --num_train_images=4 "
                                         "--num_validation_images=2 "
                                         "--num_classes=2 --num_threads=1");
  ASSERT_EQ(raw_made.exit_code, 0) << raw_made.output;
  // The first training JPEG's frame header now claims 60000x60000 pixels.
  std::string victim;
  for (const auto& entry : fs::recursive_directory_iterator(dir.sub("raw/train"))) {
    if (entry.is_regular_file()) victim = entry.path().string();
    if (!victim.empty()) break;
  }
  ASSERT_FALSE(victim.empty());
  std::string bytes;
  {
    std::ifstream in(victim, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t sof = bytes.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  for (size_t at : {sof + 5, sof + 7}) {
    bytes[at] = static_cast<char>(60000 >> 8);
    bytes[at + 1] = static_cast<char>(60000 & 0xff);
  }
  std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes;
  ToolOutput converted =
      run_bounded("imagenet_to_tfrecord", "--raw_data_dir=" + dir.sub("raw") +
                                              " --local_scratch_dir=" + dir.sub("out") +
                                              " --train_shards=1 --validation_shards=1");
  EXPECT_EQ(converted.exit_code, 0) << converted.output;
  EXPECT_TRUE(converted.contains(victim)) << converted.output;
  EXPECT_TRUE(converted.contains("60000x60000")) << converted.output;
  EXPECT_TRUE(converted.contains("train: 4 images, 1 shards (0 resumed): 3 written"))
      << converted.output;
}

// A tiny trained checkpoint.
std::string trained_checkpoint(const TempDir& dir) {
  ToolOutput trained = run_bounded(
      "inception_v3", "--mode=train --train_steps=2 --use_data=fake " + tiny("", dir.sub("model")));
  EXPECT_EQ(trained.exit_code, 0) << trained.output;
  auto latest = latest_checkpoint(dir.sub("model"));
  EXPECT_TRUE(latest.ok() && latest->has_value());
  return latest.ok() && latest->has_value() ? **latest : std::string();
}

TEST(HostileInput, ClassifyRefusesBadFlagsAndBadCheckpoints) {
  TempDir dir;
  const std::string checkpoint = trained_checkpoint(dir);
  ASSERT_FALSE(checkpoint.empty());
  // A small valid input: zeros of the checkpoint's shape.
  const std::string image = dir.sub("image.npy");
  {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (75, 75, 3), }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::ofstream out(image, std::ios::binary);
    out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size()) << '\x00' << header
        << std::string(75 * 75 * 3 * 4, '\0');
  }
  ToolOutput fine = run_bounded("classify", "--checkpoint=" + checkpoint + " " + image);
  ASSERT_EQ(fine.exit_code, 0) << fine.output;

  ToolOutput top = run_bounded("classify", "--top_k=-1 --checkpoint=" + checkpoint + " " + image);
  EXPECT_EQ(top.exit_code, 2) << top.output;
  EXPECT_TRUE(top.contains("--top_k")) << top.output;

  ToolOutput threads =
      run_bounded("classify", "--num_threads=100000 --checkpoint=" + checkpoint + " " + image);
  EXPECT_EQ(threads.exit_code, 0) << threads.output;
  EXPECT_TRUE(threads.contains("is more than the")) << threads.output;

  ToolOutput directory = run_bounded("classify", "--checkpoint=" + checkpoint + " " + dir.path());
  EXPECT_EQ(directory.exit_code, 1) << directory.output;
  EXPECT_TRUE(directory.contains("is a directory")) << directory.output;

  std::ofstream(dir.sub("labels.txt")) << "1 cat\n123456789012345678901234567890 dog\n";
  ToolOutput labels = run_bounded("classify", "--labels_file=" + dir.sub("labels.txt") +
                                                  " --checkpoint=" + checkpoint + " " + image);
  EXPECT_EQ(labels.exit_code, 1) << labels.output;
  EXPECT_TRUE(labels.contains(dir.sub("labels.txt") + ":2")) << labels.output;

  // NaN weights.
  auto file = read_checkpoint(checkpoint);  // either format: the trainer writes TF by default
  ASSERT_TRUE(file.ok());
  SafetensorsFile poisoned = *file;
  for (TensorEntry& t : poisoned.tensors) {
    if (t.dtype != DType::f32 || t.name.find("Logits") == std::string::npos) continue;
    const float nan = std::nanf("");
    std::memcpy(t.bytes.data(), &nan, sizeof(nan));
  }
  ASSERT_TRUE(write_safetensors(dir.sub("nan.safetensors"), poisoned).ok());
  ToolOutput nan =
      run_bounded("classify", "--checkpoint=" + dir.sub("nan.safetensors") + " " + image);
  EXPECT_EQ(nan.exit_code, 1) << nan.output;
  EXPECT_TRUE(nan.contains("nan")) << nan.output;
  EXPECT_FALSE(nan.contains("checkpoint: ")) << nan.output;

  // Metadata claiming 100000x100000 images.
  SafetensorsFile huge = *file;
  huge.metadata["height"] = huge.metadata["width"] = "100000";
  ASSERT_TRUE(write_safetensors(dir.sub("huge.safetensors"), huge).ok());
  ToolOutput big =
      run_bounded("classify", "--checkpoint=" + dir.sub("huge.safetensors") + " " + image, 120);
  EXPECT_EQ(big.exit_code, 1) << big.output;
  EXPECT_TRUE(big.contains("100000x100000")) << big.output;
}

// ---- unstoppable; two trainers -------------------------------------------------------------

// Full-size Inception v3 steps take seconds on a few cores: slow enough for a signal to land
// mid-step. --iterations=1 logs every step.
std::string slow_training(const std::string& model_dir, const std::string& extra = "") {
  return "--mode=train --train_steps=100000 --use_data=fake --use_tpu=False --iterations=1 "
         "--train_batch_size=8 --save_checkpoints_secs=0 --model_dir=" +
         model_dir + " " + extra;
}

TEST(Unstoppable, ASecondSignalEndsATrainerMidStep) {
  TempDir dir;
  Background trainer("inception_v3", slow_training(dir.sub("model")), dir.sub("log.txt"));
  ASSERT_TRUE(trainer.wait_for("step = 1,", 600)) << trainer.log();
  kill(trainer.pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  kill(trainer.pid(), SIGTERM);
  const int status = trainer.wait_exit(30);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_NE(status, -1) << "still running after the second SIGTERM\n" << trainer.log();
  // Unless step 2 happened to end within those 200 ms (then it stopped cleanly, exit 0).
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    GTEST_SKIP() << "the step boundary came first; nothing to cut short\n" << trainer.log();
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << trainer.log();
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(trainer.log().find("a second stop signal: exiting at once"), std::string::npos)
      << trainer.log();
}

TEST(Unstoppable, NoStepBoundaryWithinTheTimeoutEndsATrainer) {
  TempDir dir;
  Background trainer("inception_v3", slow_training(dir.sub("model"), "--stop_timeout_secs=1"),
                     dir.sub("log.txt"));
  ASSERT_TRUE(trainer.wait_for("step = 1,", 600)) << trainer.log();
  kill(trainer.pid(), SIGINT);
  const int status = trainer.wait_exit(30);
  ASSERT_NE(status, -1) << "still running 30 s after SIGINT\n" << trainer.log();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    GTEST_SKIP() << "a step ended within 1 s; the stop was clean\n" << trainer.log();
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT) << trainer.log();
  EXPECT_NE(trainer.log().find("no step boundary came within --stop_timeout_secs"),
            std::string::npos)
      << trainer.log();
}

TEST(ModelDirLock, ASecondTrainerIsRefusedAndEvalMayRunAlongside) {
  TempDir dir;
  Background first("inception_v3", slow_training(dir.sub("model")), dir.sub("first.txt"));
  ASSERT_TRUE(first.wait_for("step = 1,", 600)) << first.log();
  ToolOutput second = run_bounded(
      "inception_v3", "--mode=train --train_steps=4 --use_data=fake " + tiny("", dir.sub("model")));
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_TRUE(second.contains("is in use by another trainer (pid " + std::to_string(first.pid())))
      << second.output;

  // --mode=eval only reads the model_dir: allowed alongside.
  ToolOutput eval = run_bounded(
      "inception_v3", "--mode=eval --eval_timeout=0 --use_data=fake " + tiny("", dir.sub("model")));
  EXPECT_EQ(eval.exit_code, 0) << eval.output;

  // A killed holder leaves .lock behind; the next trainer takes it over.
  kill(first.pid(), SIGKILL);
  first.wait_exit(30);
  ToolOutput after = run_bounded(
      "inception_v3", "--mode=train --train_steps=2 --use_data=fake " + tiny("", dir.sub("model")));
  EXPECT_EQ(after.exit_code, 0) << after.output;
}

}  // namespace
}  // namespace ic
