// serve on an export base directory, as TF Serving is pointed at one: the newest numbered
// version holding model.safetensors (what `export_model --format=safetensors` writes) is
// served, answers predict exactly as the server on the training model_dir does, reports its
// directory number as the version, and a newer export appearing is picked up by the watcher.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "io/tensor_bundle.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;
namespace fs = std::filesystem;

TEST(ServeExportDir, ServesTheNewestSafetensorsExportAndSwitchesToANewerOne) {
  // Two servers compile the same graph; with their convolution algorithms chosen by timing
  // (under a loaded machine, differently) they would agree only to the last bits.
  ::setenv("IC_CONV_TIMING", "0", 1);
  struct TimingBack {
    ~TimingBack() { ::unsetenv("IC_CONV_TIMING"); }
  } timing_back;
  TempDir dir;
  const std::string model_dir = dir.sub("model");
  const std::string export_dir = dir.sub("export");
  train_model(model_dir, 2);
  const std::string first = export_once(model_dir, export_dir, "safetensors");
  ASSERT_FALSE(first.empty());

  ServerOptions options;
  options.max_batch_size = 2;
  options.batch_timeout = std::chrono::milliseconds(1);
  options.poll_interval = std::chrono::milliseconds(100);
  // Bit for bit needs one precision in both: auto times float32 against bfloat16 in each
  // server and, where the two are close, the servers may choose differently.
  options.precision = ServePrecision::float32;
  options.model_dir = model_dir;
  RunningServer on_checkpoint(options);
  options.model_dir = export_dir;
  RunningServer on_export(options);

  EXPECT_EQ(served_version(on_checkpoint), "2");  // a checkpoint: its global step
  EXPECT_EQ(served_version(on_export), first);    // an export: its directory number
  const std::string body =
      json{{"instances", {b64_instance(test_image(3)), b64_instance(test_image(8))}}}.dump();
  const Reply from_checkpoint = post(on_checkpoint, "/v1/models/inception_v3:predict", body);
  const Reply from_export = post(on_export, "/v1/models/inception_v3:predict", body);
  ASSERT_EQ(from_checkpoint.status, 200) << from_checkpoint.body.dump();
  ASSERT_EQ(from_export.status, 200) << from_export.body.dump();
  // The same (EMA) weights through the same graph: the same answers, bit for bit.
  EXPECT_EQ(from_export.body["predictions"], from_checkpoint.body["predictions"]);
  on_checkpoint.stop();

  // A newer safetensors export replaces even a SavedModel version (servable too, see below).
  export_once(model_dir, export_dir, "saved_model");
  const std::string second = export_once(model_dir, export_dir, "safetensors");
  ASSERT_FALSE(second.empty());
  ASSERT_GT(std::stoll(second), std::stoll(first));
  std::string version;
  for (int i = 0; i < 200 && version != second; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    version = served_version(on_export);
  }
  EXPECT_EQ(version, second);
  const Reply after =
      post(on_export, "/v1/models/inception_v3/versions/" + second + ":predict", body);
  ASSERT_EQ(after.status, 200) << after.body.dump();
  EXPECT_EQ(after.body["predictions"], from_checkpoint.body["predictions"]);
}

// Serves an export of `format` only (no model.safetensors next to it) and checks it answers a
// predict of two images as serving the checkpoint it came from does, within 1e-6.
void expect_export_answers_as_the_checkpoint(const std::string& format) {
  TempDir dir;
  const std::string model_dir = dir.sub("model");
  const std::string export_dir = dir.sub("export");
  train_model(model_dir, 2);
  const std::string version = export_once(model_dir, export_dir, format);
  ASSERT_FALSE(version.empty());
  ASSERT_FALSE(fs::exists(export_dir + "/" + version + "/model.safetensors"));
  expect_export_answers_as_checkpoint("inception_v3", model_dir, export_dir, version, 1e-6);
}

// The SavedModel's variables are the checkpoint's EMA weights, the graph the same (without
// the auxiliary head, which no output reads): the same answers.
TEST(ServeExportDir, ServesASavedModelOnlyExportAsTheCheckpoint) {
  expect_export_answers_as_the_checkpoint("saved_model");
}

// The ONNX export's folded weights, folded once more through an identity batch norm: the same
// answers to a float's rounding.
TEST(ServeExportDir, ServesAnOnnxOnlyExportAsTheCheckpoint) {
  expect_export_answers_as_the_checkpoint("onnx");
}

TEST(ServeExportDir, AForeignSavedModelIsRefusedNamingWhatCanBeServed) {
  TempDir dir;
  const std::string export_dir = dir.sub("export");
  fs::create_directories(export_dir + "/1/variables");
  std::ofstream(export_dir + "/1/saved_model.pb") << "a graph";
  const float kernel[4] = {1, 2, 3, 4};
  ASSERT_TRUE(write_tensor_bundle(export_dir + "/1/variables/variables", {},
                                  {TensorView{"dense/kernel", DType::f32, Shape{2, 2}, kernel}})
                  .ok());
  std::mutex mutex;
  std::string logged;
  ServerOptions options;
  options.model_dir = export_dir;
  options.log = [&](const std::string& line) {
    std::lock_guard lock(mutex);
    logged += line + "\n";
  };
  {
    RunningServer server(options);
    // Nothing loaded: unavailable, and the log says why and what can be served.
    EXPECT_EQ(get(server, "/v1/models/inception_v3").status, 503);
  }
  EXPECT_NE(logged.find("export_model did not write"), std::string::npos) << logged;
  EXPECT_NE(logged.find("model.safetensors"), std::string::npos) << logged;
}

}  // namespace
}  // namespace ic
