// Hostile values reaching the trainer's library code: checkpoints with absurd metadata or NaN
// weights, flags whose memory need is beyond the machine, and stop signals that must not leave the
// process unstoppable.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/stop_signal.h"
#include "runtime/checkpoint_checks.h"
#include "train/run_options.h"
#include "train/train_flags.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string& name) {
  return (fs::temp_directory_path() / ("ic_train_bad_" + std::to_string(getpid()) + "_" + name))
      .string();
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

TEST(MemoryNeeds, BatchesBeyondPhysicalMemoryAreRefusedWithTheFigures) {
  RunOptions o;
  o.mode = Mode::eval;
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
  o.use_data = UseData::fake;
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

// mpirun, once signalled, stops reading its processes' output: a trainer blocked writing to a
// full pipe must still reach its step boundary. Here the child's stdout is a pipe nobody reads;
// the stop signal comes while a write is blocked on it, and the write returns.
TEST(StopSignals, AFullOutputPipeDoesNotHoldTheStop) {
  const std::string log = temp_file("full_pipe.log");
  ChildResult r = run_child(60, log, [] {
    int fds[2];
    if (pipe(fds) != 0 || dup2(fds[1], STDOUT_FILENO) < 0) _exit(3);
    const pthread_t writer = pthread_self();
    std::thread([writer] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the pipe is full by now
      pthread_kill(writer, SIGTERM);
    }).detach();
    const std::vector<char> chunk(4096, 'x');
    for (;;) {
      if (write(STDOUT_FILENO, chunk.data(), chunk.size()) < 0)
        _exit(errno == EAGAIN && stop_requested() ? 0 : 4);
    }
  });
  ASSERT_TRUE(WIFEXITED(r.status)) << read_all(log);
  EXPECT_EQ(WEXITSTATUS(r.status), 0) << read_all(log);
  EXPECT_LT(r.seconds, 10);
  fs::remove(log);
}

}  // namespace
}  // namespace ic
