// Warm-up requests as TensorFlow Serving reads them: export_model --warmup_images writes
// assets.extra/tf_serving_warmup_requests into the version, serve replays it before the version
// serves (the log says so before the load line), a damaged file keeps the version from loading
// while the previous one goes on serving, and a file written with TF Serving's own messages (a
// classify_log of tf.Examples, as a Python client writes one) replays too.
#include "serve/warmup.h"

#include <filesystem>
#include <mutex>
#include <set>

#include "infer/warmup_export.h"
#include "io/tfrecord.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;
namespace fs = std::filesystem;

// The server's log lines, collected from its own thread.
class LogLines {
 public:
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(line);
    };
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  // The index of the first line containing `text`, or -1.
  int find(const std::string& text) const {
    const std::vector<std::string> all = lines();
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].find(text) != std::string::npos) return static_cast<int>(i);
    return -1;
  }
  std::string joined() const {
    std::string text;
    for (const std::string& line : lines()) text += line + "\n";
    return text;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Runs export_model --format=safetensors and returns the version directory it added.
std::string export_version(const std::string& model_dir, const std::string& export_dir,
                           const std::string& extra) {
  const ToolOutput run =
      run_tool("export_model", "--model_dir=" + model_dir + " --export_dir=" + export_dir +
                                   " --format=safetensors " + extra);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (const auto& entry : fs::directory_iterator(export_dir)) {
    if (entry.path().filename().string().rfind("temp-", 0) == 0) continue;
    return entry.path().string();  // the tests export once into a fresh directory
  }
  ADD_FAILURE() << "no version directory: " << run.output;
  return "";
}

ServerOptions options_for(const std::string& model_dir, LogLines& log) {
  ServerOptions options;
  options.max_batch_size = 2;
  options.batch_timeout = std::chrono::milliseconds(1);
  options.model_dir = model_dir;
  options.log = log.sink();
  return options;
}

std::string predict_body() { return json{{"instances", {b64_instance(test_image(5))}}}.dump(); }

// Version `version` of `export_dir`: a copy of `from` with `warmup` as its warm-up file.
std::string copy_version_with_warmup(const std::string& from, const std::string& export_dir,
                                     int64_t version, const std::string& warmup) {
  const std::string temp = export_dir + "/temp-copy";
  fs::copy(from, temp, fs::copy_options::recursive);
  fs::create_directories(temp + "/assets.extra");
  write_bytes(temp + "/" + kWarmupRequestsFile, warmup);
  const std::string dir = export_dir + "/" + std::to_string(version);
  fs::rename(temp, dir);
  return dir;
}

class ServeWarmup : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    train_model(dir_->sub("model"), 2);
    write_bytes(dir_->sub("a.jpg"), test_image(1));
    write_bytes(dir_->sub("b.png"), test_image(2, 60, 80, /*png=*/true));
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::unique_ptr<TempDir> dir_;
};
std::unique_ptr<TempDir> ServeWarmup::dir_;

TEST_F(ServeWarmup, ExportedRequestsAreReplayedBeforeTheVersionServes) {
  const std::string export_dir = dir_->sub("export_good");
  const std::string version =
      export_version(dir_->sub("model"), export_dir,
                     "--warmup_images=" + dir_->sub("a.jpg") + "," + dir_->sub("b.png"));
  ASSERT_FALSE(version.empty());
  const std::string file = version + "/" + kWarmupRequestsFile;
  ASSERT_TRUE(fs::exists(file));

  // What TF Serving would read: one classify Predict request per image, its bytes unchanged.
  Result<std::vector<tensorflow::serving::PredictionLog>> logs = read_warmup_requests(file);
  ASSERT_TRUE(logs.ok()) << logs.status().message();
  ASSERT_EQ(logs->size(), 2u);
  const std::vector<std::string> images = {test_image(1), test_image(2, 60, 80, true)};
  for (size_t i = 0; i < logs->size(); ++i) {
    ASSERT_TRUE((*logs)[i].has_predict_log());
    const tensorflow::serving::PredictRequest& request = (*logs)[i].predict_log().request();
    EXPECT_EQ(request.model_spec().name(), "inception_v3");
    EXPECT_EQ(request.model_spec().signature_name(), "classify");
    ASSERT_EQ(request.inputs().count("image_bytes"), 1u);
    const tensorflow::TensorProto& tensor = request.inputs().at("image_bytes");
    EXPECT_EQ(tensor.dtype(), tensorflow::DT_STRING);
    ASSERT_EQ(tensor.tensor_shape().dim_size(), 1);
    EXPECT_EQ(tensor.tensor_shape().dim(0).size(), 1);
    ASSERT_EQ(tensor.string_val_size(), 1);
    EXPECT_EQ(tensor.string_val(0), images[i]);
  }

  LogLines log;
  RunningServer server(options_for(export_dir, log));
  const int warmed = log.find("warm-up: replayed 2 requests from " + file + " in ");
  const int loaded = log.find("loaded version ");
  ASSERT_GE(warmed, 0) << log.joined();
  ASSERT_GE(loaded, 0) << log.joined();
  EXPECT_LT(warmed, loaded) << log.joined();
  const Reply reply = post(server, "/v1/models/inception_v3:predict", predict_body());
  EXPECT_EQ(reply.status, 200) << reply.body.dump();
}

TEST_F(ServeWarmup, ExportRefusesAWarmupImageItCannotRead) {
  write_bytes(dir_->sub("not_an_image.jpg"), "plain text");
  const std::string export_dir = dir_->sub("export_refused");
  const ToolOutput run = run_tool(
      "export_model", "--model_dir=" + dir_->sub("model") + " --export_dir=" + export_dir +
                          " --format=safetensors --warmup_images=" + dir_->sub("not_an_image.jpg"));
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_TRUE(run.contains("not_an_image.jpg")) << run.output;
  EXPECT_FALSE(fs::exists(export_dir) && !fs::is_empty(export_dir)) << run.output;
}

TEST_F(ServeWarmup, ADamagedFileKeepsTheVersionFromLoadingAndThePreviousServes) {
  const std::string export_dir = dir_->sub("export_damaged");
  const std::string first = export_version(dir_->sub("model"), export_dir, "");
  ASSERT_FALSE(first.empty());
  LogLines log;
  ServerOptions options = options_for(export_dir, log);
  options.poll_interval = std::chrono::milliseconds(50);
  RunningServer server(options);
  ASSERT_EQ(post(server, "/v1/models/inception_v3:predict", predict_body()).status, 200);

  // Record 1 is fine, record 2's data CRC is wrong.
  std::string second_record = frame_tfrecord(warmup_predict_log("inception_v3", test_image(4)));
  second_record[second_record.size() - 1] ^= 0x5a;
  const std::string damaged =
      frame_tfrecord(warmup_predict_log("inception_v3", test_image(3))) + second_record;
  const int64_t first_version = std::stoll(fs::path(first).filename().string());
  const std::string second =
      copy_version_with_warmup(first, export_dir, first_version + 1, damaged);

  int failed = -1;
  for (int i = 0; i < 200 && failed < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    failed = log.find("could not load a checkpoint: ");
  }
  ASSERT_GE(failed, 0) << log.joined();
  const std::string line = log.lines()[static_cast<size_t>(failed)];
  EXPECT_NE(line.find(second + "/" + kWarmupRequestsFile), std::string::npos) << line;
  EXPECT_NE(line.find("warm-up record 2"), std::string::npos) << line;
  EXPECT_NE(line.find("still serving version " + std::to_string(first_version)), std::string::npos)
      << line;
  EXPECT_EQ(log.find("reloaded"), -1) << log.joined();
  const Reply status = get(server, "/v1/models/inception_v3");
  ASSERT_EQ(status.status, 200);
  EXPECT_EQ(status.body["model_version_status"][0]["version"], std::to_string(first_version));
  EXPECT_EQ(post(server, "/v1/models/inception_v3:predict", predict_body()).status, 200);
}

TEST_F(ServeWarmup, AClassifyLogWrittenWithTfServingsMessagesReplays) {
  const std::string export_dir = dir_->sub("export_classify");
  const std::string first = export_version(dir_->sub("model"), export_dir, "");
  ASSERT_FALSE(first.empty());
  // As a Python client writes it: PredictionLog(classify_log=ClassifyLog(request=...)) with two
  // tf.Examples holding image/encoded, each record framed as tf.io.TFRecordWriter does.
  tensorflow::serving::PredictionLog classify;
  tensorflow::serving::ClassificationRequest* request =
      classify.mutable_classify_log()->mutable_request();
  request->mutable_model_spec()->set_name("inception_v3");
  for (int seed : {6, 7}) {
    tensorflow::Example* example = request->mutable_input()->mutable_example_list()->add_examples();
    (*example->mutable_features()->mutable_feature())["image/encoded"]
        .mutable_bytes_list()
        ->add_value(test_image(seed));
  }
  tensorflow::serving::PredictionLog predict;
  tensorflow::serving::PredictRequest* predict_request =
      predict.mutable_predict_log()->mutable_request();
  predict_request->mutable_model_spec()->set_signature_name("serving_default");
  tensorflow::TensorProto& images = (*predict_request->mutable_inputs())["images"];
  images.set_dtype(tensorflow::DT_FLOAT);
  for (int64_t size : {1, 75, 75, 3}) images.mutable_tensor_shape()->add_dim()->set_size(size);
  for (int i = 0; i < 75 * 75 * 3; ++i) images.add_float_val(0.25f);
  const int64_t version = std::stoll(fs::path(first).filename().string()) + 1;
  const std::string dir = copy_version_with_warmup(
      first, export_dir, version,
      frame_tfrecord(classify.SerializeAsString()) + frame_tfrecord(predict.SerializeAsString()));
  fs::remove_all(first);

  LogLines log;
  RunningServer server(options_for(export_dir, log));
  EXPECT_GE(log.find("warm-up: replayed 2 requests from " + dir + "/" + kWarmupRequestsFile), 0)
      << log.joined();
  EXPECT_EQ(post(server, "/v1/models/inception_v3:predict", predict_body()).status, 200);
}

// The reader alone: TF Serving's limit, and kinds this server does not answer.
TEST(WarmupReader, MoreThanTheLimitAndUnansweredKindsAreErrors) {
  TempDir dir;
  const std::string record = frame_tfrecord(warmup_predict_log("m", "bytes"));
  std::string limit, over;
  for (int64_t i = 0; i < kMaxWarmupRecords; ++i) limit += record;
  over = limit + record;
  write_bytes(dir.sub("limit"), limit);
  write_bytes(dir.sub("over"), over);
  Result<std::vector<tensorflow::serving::PredictionLog>> at_limit =
      read_warmup_requests(dir.sub("limit"));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  EXPECT_EQ(static_cast<int64_t>(at_limit->size()), kMaxWarmupRecords);
  Result<std::vector<tensorflow::serving::PredictionLog>> too_many =
      read_warmup_requests(dir.sub("over"));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), StatusCode::resource_exhausted);
  EXPECT_NE(too_many.status().message().find("1000"), std::string::npos);
  EXPECT_NE(too_many.status().message().find(dir.sub("over")), std::string::npos);

  tensorflow::serving::PredictionLog regress;
  regress.mutable_regress_log();
  write_bytes(dir.sub("regress"), record + frame_tfrecord(regress.SerializeAsString()));
  Result<std::vector<tensorflow::serving::PredictionLog>> refused =
      read_warmup_requests(dir.sub("regress"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("warm-up record 2 is a regress_log"), std::string::npos)
      << refused.status().message();

  write_bytes(dir.sub("garbage"), frame_tfrecord("\xff\xff\xff"));
  Result<std::vector<tensorflow::serving::PredictionLog>> garbage =
      read_warmup_requests(dir.sub("garbage"));
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), StatusCode::data_loss);
  EXPECT_NE(garbage.status().message().find("warm-up record 1"), std::string::npos);
}

}  // namespace
}  // namespace ic
