// Hostile values reaching the trainer's and classify's library code: .npy headers whose shape
// overflows, checkpoints with absurd metadata or NaN weights, label files with huge numbers,
// flags whose memory need is beyond the machine, and stop signals that must not leave the
// process unstoppable.
#include <gflags/gflags.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "train/checkpoint_checks.h"
#include "train/classify.h"
#include "train/npy.h"
#include "train/run_options.h"
#include "train/stop_signal.h"
#include "train/train_flags.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string& name) {
  return (fs::temp_directory_path() / ("ic_train_bad_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// A version 1.0 .npy file with `shape_text` in its header and `data_bytes` bytes of data.
std::string write_npy_header(const std::string& name, const std::string& shape_text,
                             size_t data_bytes) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(data_bytes, '\0');
  const std::string path = temp_file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(HostileNpy, ShapesWhoseProductOverflowsAreErrors) {
  // 2^62 * 4 elements wraps to 0 in int64 arithmetic: a 0-byte data section would "match".
  for (const std::string shape : {"(4611686018427387904, 4)", "(4294967296, 4294967296, 3)",
                                  "(9223372036854775807, 2)", "(3037000500, 3037000500)"}) {
    const std::string path = write_npy_header("overflow.npy", shape, 0);
    Result<NpyArray> array = read_npy(path);
    ASSERT_FALSE(array.ok()) << shape;
    EXPECT_NE(array.status().message().find(path), std::string::npos) << array.status().message();
    fs::remove(path);
  }
  const std::string path = write_npy_header("fine.npy", "(2, 3)", 24);
  Result<NpyArray> fine = read_npy(path);
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ(fine->data.size(), 6u);
  fs::remove(path);
}

CheckpointMeta good_meta() { return CheckpointMeta{"inception_v3", 11, 75, 75, 0.1, ""}; }

TEST(CheckpointChecks, MetadataOutOfRangeIsRefusedNamingTheField) {
  EXPECT_TRUE(check_checkpoint_meta(good_meta(), "ck").ok());
  CheckpointMeta huge = good_meta();
  huge.height = huge.width = 100000;
  const Status image = check_checkpoint_meta(huge, "model.ckpt-1.safetensors");
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.message().find("100000x100000"), std::string::npos) << image.message();
  EXPECT_NE(image.message().find("model.ckpt-1.safetensors"), std::string::npos);
  CheckpointMeta classes = good_meta();
  classes.num_classes = int64_t{1} << 40;
  EXPECT_FALSE(check_checkpoint_meta(classes, "ck").ok());
  classes.num_classes = 0;
  EXPECT_FALSE(check_checkpoint_meta(classes, "ck").ok());
  CheckpointMeta depth = good_meta();
  depth.depth_multiplier = std::nan("");
  EXPECT_FALSE(check_checkpoint_meta(depth, "ck").ok());
  depth.height = -5;
  depth.depth_multiplier = 1;
  EXPECT_FALSE(check_checkpoint_meta(depth, "ck").ok());
}

TEST(CheckpointChecks, NanOrInfValuesAreRefusedNamingTheTensor) {
  SafetensorsFile file;
  TensorEntry weights{"InceptionV3/Logits/weights", DType::f32, Shape{{3}}, std::string(12, '\0')};
  TensorEntry step{"global_step", DType::i64, Shape{}, std::string(8, '\xff')};
  file.tensors = {step, weights};
  EXPECT_TRUE(check_checkpoint_values(file, "ck").ok());

  const float nan = std::nanf("");
  std::memcpy(file.tensors[1].bytes.data() + 8, &nan, 4);
  const Status refused = check_checkpoint_values(file, "model.ckpt-7.safetensors");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("InceptionV3/Logits/weights"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("element 2"), std::string::npos) << refused.message();

  TensorEntry bf16{"moving_variance", DType::bf16, Shape{{2}}, std::string(4, '\0')};
  const uint16_t inf = 0x7f80;  // bf16 +Inf
  std::memcpy(bf16.bytes.data() + 2, &inf, 2);
  SafetensorsFile half;
  half.tensors = {bf16};
  EXPECT_FALSE(check_checkpoint_values(half, "ck").ok());
}

TEST(LabelNames, AHugeLabelNumberIsAnErrorNamingFileAndLine) {
  const std::string path = temp_file("labels.txt");
  std::ofstream(path) << "1 cat\n99999999999999999999999999 dog\n";
  auto names = read_label_names(path);
  ASSERT_FALSE(names.ok());
  EXPECT_NE(names.status().message().find(path + ":2"), std::string::npos)
      << names.status().message();
  std::ofstream(path) << "1 cat\n2 dog\n";
  auto fine = read_label_names(path);
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->at(2), "dog");
  fs::remove(path);
}

TEST(ClassifyOptionsCheck, TopKBelowOneIsAnError) {
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  for (int k : {0, -1}) {
    ClassifyOptions options{"", "no-such-checkpoint.safetensors", {"x.jpg"}, k};
    auto result = classify(options, **backend);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find("top_k"), std::string::npos)
        << result.status().message();
  }
}

TEST(MemoryNeeds, BatchesBeyondPhysicalMemoryAreRefusedWithTheFigures) {
  RunOptions o;
  o.mode = "eval";
  o.eval_batch_size = 100000;
  const Status refused = check_memory_fits(o, uint64_t{23} << 30);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("--eval_batch_size=100000"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("299x299x3"), std::string::npos) << refused.message();
  o.eval_batch_size = 1024;  // the reference's defaults fit a machine of 16 GB
  EXPECT_TRUE(check_memory_fits(o, uint64_t{16} << 30).ok());
  o.train_batch_size = 2000000000;
  o.height = o.width = 2000000000;  // no overflow in the arithmetic either
  EXPECT_FALSE(check_memory_fits(o, uint64_t{16} << 30).ok());
  EXPECT_TRUE(check_memory_fits(o, 0).ok());  // unknown memory: no check
}

TEST(NewFlags, BadValuesAreRefused) {
  RunOptions o;
  o.use_data = "fake";
  o.model_dir = "/tmp/x";
  ASSERT_TRUE(validate_run_options(o).ok());
  RunOptions fraction = o;
  fraction.max_bad_input_fraction = 1.5;
  EXPECT_FALSE(validate_run_options(fraction).ok());
  RunOptions pixels = o;
  pixels.max_image_pixels = 0;
  EXPECT_FALSE(validate_run_options(pixels).ok());
  RunOptions timeout = o;
  timeout.stop_timeout_secs = -1;
  EXPECT_FALSE(validate_run_options(timeout).ok());
}

// Runs `body` in a forked child after installing the stop handlers; returns its wait status
// and how long it took. The child's stderr goes to `stderr_path`.
struct ChildResult {
  int status = 0;
  double seconds = 0;
};
template <typename Body>
ChildResult run_child(int timeout_secs, const std::string& stderr_path, Body body) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) {
    FILE* err = std::freopen(stderr_path.c_str(), "w", stderr);
    (void)err;
    install_stop_signal_handlers("stop_test", timeout_secs);
    body();
    _exit(0);
  }
  ChildResult result;
  waitpid(child, &result.status, 0);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(StopSignals, ASecondSignalExitsAtOnce) {
  const std::string log = temp_file("second.log");
  ChildResult r = run_child(60, log, [] {
    raise(SIGTERM);  // first: only a request
    if (!stop_requested()) _exit(5);
    raise(SIGTERM);  // second: gone
    _exit(6);
  });
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 128 + SIGTERM);
  EXPECT_NE(read_all(log).find("stop_test: a second stop signal"), std::string::npos)
      << read_all(log);
  fs::remove(log);
}

TEST(StopSignals, NoStepBoundaryWithinTheTimeoutExitsAtOnce) {
  const std::string log = temp_file("timeout.log");
  ChildResult r = run_child(1, log, [] {
    raise(SIGINT);
    std::this_thread::sleep_for(std::chrono::seconds(20));  // a step that never ends
    _exit(6);
  });
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 128 + SIGINT);
  EXPECT_LT(r.seconds, 10);
  EXPECT_NE(read_all(log).find("no step boundary came within --stop_timeout_secs"),
            std::string::npos)
      << read_all(log);
  fs::remove(log);
}

TEST(StopSignals, AnAcknowledgedStopIsNotCutShort) {
  const std::string log = temp_file("ack.log");
  ChildResult r = run_child(1, log, [] {
    raise(SIGTERM);
    acknowledge_stop();  // the run loop reached a step boundary: writing the checkpoint
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    _exit(0);
  });
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 0) << read_all(log);
  fs::remove(log);
}

}  // namespace
}  // namespace ic
