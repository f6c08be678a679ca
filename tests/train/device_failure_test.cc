// A device that fails asynchronously (as a CUDA kernel fault does: the call returns, the error
// shows up later in Backend::status()) stops the run loop at the end of that loop, with the
// device's message, before a loss is reported or a checkpoint of its weights is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/temp_dir_test_util.h"
#include "train/forwarding_backend.h"
#include "train/run_loop.h"
#include "train/train_flags.h"

namespace ic {
namespace {

// The CPU backend, except that status() reports a failure once more than `healthy_batches`
// label batches (uploads of `label_bytes`) have been uploaded: every call still runs, as on a GPU
// whose failure is only seen when asked for.
class FailingLaterBackend final : public testing::ForwardingBackend {
 public:
  FailingLaterBackend(size_t label_bytes, int healthy_batches)
      : ForwardingBackend(testing::cpu_backend_for_tests()),
        label_bytes_(label_bytes),
        healthy_batches_(healthy_batches) {}

  std::string description() const override { return "failing test device"; }
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes == label_bytes_) ++batches_;
    ForwardingBackend::upload(dst, src, bytes);
  }
  Status status() override {
    if (batches_ <= healthy_batches_) return Status();
    return error("an illegal memory access was encountered (in the test's kernel)");
  }

 private:
  size_t label_bytes_;
  int healthy_batches_;
  int batches_ = 0;
};

using testing::TempDir;

Result<RunOptions> tiny_run(const std::string& model_dir, const std::string& mode) {
  std::vector<std::string> args = {"prog",
                                   "--use_data=fake",
                                   "--use_tpu=False",
                                   "--mode=" + mode,
                                   "--width=75",
                                   "--height=75",
                                   "--depth_multiplier=0.25",
                                   "--num_classes=11",
                                   "--iterations=2",
                                   "--train_steps=4",
                                   "--train_batch_size=2",
                                   "--eval_batch_size=2",
                                   "--eval_total_size=2",
                                   "--train_steps_per_eval=2",
                                   "--model_dir=" + model_dir};
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  bool help = false;
  return parse_run_options("inception_v3", static_cast<int>(argv.size()), argv.data(), &help);
}

bool has_checkpoint_files(const std::string& model_dir) {
  for (const auto& entry : std::filesystem::directory_iterator(model_dir)) {
    if (entry.path().filename().string().rfind("model.ckpt-", 0) == 0) return true;
  }
  return false;
}

TEST(DeviceFailure, TrainingStopsAtTheLoopEndWithTheDeviceMessageAndWritesNoCheckpoint) {
  TempDir dir;
  Result<RunOptions> options = tiny_run(dir.path(), "train");
  ASSERT_TRUE(options.ok()) << options.status().message();
  // Two steps (batches of 2 int32 labels) are healthy; the third step fails.
  FailingLaterBackend device(2 * sizeof(int32_t), /*healthy_batches=*/2);
  std::ostringstream log;
  const Status status = run_mode(*options, device, log);
  ASSERT_FALSE(status.ok()) << log.str();
  EXPECT_NE(status.message().find("illegal memory access"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("failed during training"), std::string::npos) << status.message();
  // The first loop (steps 1-2) was reported; the failing one (steps 3-4) was not, nor saved.
  EXPECT_NE(log.str().find("step = 2,"), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find("step = 4,"), std::string::npos) << log.str();
  EXPECT_FALSE(has_checkpoint_files(dir.path()));
}

TEST(DeviceFailure, EvaluationReportsNoResultFromAFailedDevice) {
  TempDir dir;
  Result<RunOptions> options = tiny_run(dir.path(), "train_and_eval");
  ASSERT_TRUE(options.ok()) << options.status().message();
  // Training's loop of two steps is healthy; evaluation's first batch fails.
  FailingLaterBackend device(2 * sizeof(int32_t), /*healthy_batches=*/2);
  std::ostringstream log;
  const Status status = run_mode(*options, device, log);
  ASSERT_FALSE(status.ok()) << log.str();
  EXPECT_NE(status.message().find("failed during evaluation"), std::string::npos)
      << status.message();
  EXPECT_EQ(log.str().find("Saving dict for global step"), std::string::npos) << log.str();
}

}  // namespace
}  // namespace ic
