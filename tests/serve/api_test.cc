// Each endpoint of the real server (in this process, on a loopback port, with a tiny trained
// model): its success response in TF Serving's shape, and its errors with their status codes.
#include "serve/api.h"

#include <fstream>

#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;

class ServeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    train_model(dir_.sub("model"), 2);
    ServerOptions options;
    options.model_dir = dir_.sub("model");
    options.max_batch_size = 4;
    options.max_body_bytes = 1 << 20;
    options.label_names = {{0, "zero"}, {1, "one"}, {2, "two"}, {8, "eight"}};
    server_ = std::make_unique<RunningServer>(options);
  }
  TempDir dir_;
  std::unique_ptr<RunningServer> server_;
};

TEST_F(ServeApi, StatusMetadataHealthMetricsAndPage) {
  const Reply status = get(*server_, "/v1/models/inception_v3");
  ASSERT_EQ(status.status, 200) << status.body;
  const json& version = status.body["model_version_status"][0];
  EXPECT_EQ(version["version"], "2");
  EXPECT_EQ(version["state"], "AVAILABLE");
  EXPECT_EQ(version["status"]["error_code"], "OK");
  EXPECT_EQ(get(*server_, "/v1/models/inception_v3/versions/2").status, 200);

  const Reply meta = get(*server_, "/v1/models/inception_v3/metadata");
  ASSERT_EQ(meta.status, 200) << meta.body;
  EXPECT_EQ(meta.body["model_spec"]["name"], "inception_v3");
  EXPECT_EQ(meta.body["model_spec"]["version"], "2");
  const json& sig = meta.body["metadata"]["signature_def"]["signature_def"]["serving_default"];
  EXPECT_EQ(sig["inputs"]["images"]["dtype"], "DT_FLOAT");
  const json& dims = sig["inputs"]["images"]["tensor_shape"]["dim"];
  ASSERT_EQ(dims.size(), 4u);
  EXPECT_EQ(dims[0]["size"], "-1");
  EXPECT_EQ(dims[1]["size"], "75");
  EXPECT_EQ(dims[3]["size"], "3");
  EXPECT_EQ(sig["outputs"]["classes"]["dtype"], "DT_INT64");
  EXPECT_EQ(sig["outputs"]["probabilities"]["tensor_shape"]["dim"][1]["size"], "11");

  const Reply health = get(*server_, "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body["version"], 2);

  // One predict, then its traces in /metrics.
  const json body = {{"instances", {b64_instance(test_image(1))}}};
  ASSERT_EQ(post(*server_, "/v1/models/inception_v3:predict", body.dump()).status, 200);
  // A request is counted once its answer has been written: the count may trail the answer
  // by a moment.
  const std::string counted = "serve_requests_total{endpoint=\"predict\",code=\"200\"} 1";
  HttpAnswer metrics = http_get(server_->port(), "/metrics");
  for (int i = 0; i < 100 && metrics.answered() && metrics.body.find(counted) == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    metrics = http_get(server_->port(), "/metrics");
  }
  ASSERT_TRUE(metrics.answered());
  EXPECT_EQ(metrics.status, 200);
  for (const char* line :
       {"serve_requests_total{endpoint=\"predict\",code=\"200\"} 1", "serve_model_version 2",
        "serve_images_total 1", "serve_batch_size_count 1", "serve_request_duration_seconds_count",
        "serve_model_loads_total{result=\"ok\"} 1", "serve_stage_seconds_count{stage=\"model\"} 1",
        "serve_stage_seconds_sum{stage=\"preprocess\"} 0."}) {
    EXPECT_NE(metrics.body.find(line), std::string::npos) << line << "\n" << metrics.body;
  }
  const HttpAnswer page = http_get(server_->port(), "/");
  ASSERT_TRUE(page.answered());
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find(":classify"), std::string::npos);
}

TEST_F(ServeApi, PredictRowColumnarNamedAndClassify) {
  const std::string jpeg = test_image(1), png = test_image(2, 80, 80, true);
  const json row = {{"instances", {b64_instance(jpeg), {{"images", b64_instance(png)}}}}};
  const Reply predicted = post(*server_, "/v1/models/inception_v3:predict", row.dump());
  ASSERT_EQ(predicted.status, 200) << predicted.body;
  const json& predictions = predicted.body["predictions"];
  ASSERT_EQ(predictions.size(), 2u);
  for (const json& p : predictions) {
    ASSERT_EQ(p["probabilities"].size(), 11u);
    double sum = 0, best = -1;
    int64_t best_class = -1;
    for (size_t c = 0; c < 11; ++c) {
      const double v = p["probabilities"][c].get<double>();
      sum += v;
      if (v > best) best = v, best_class = static_cast<int64_t>(c);
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_EQ(p["classes"].get<int64_t>(), best_class);
  }

  // The same images in the columnar form give the same numbers.
  const json columnar = {{"inputs", {{"images", {b64_instance(jpeg), b64_instance(png)}}}}};
  const Reply outputs = post(*server_, "/v1/models/inception_v3:predict", columnar.dump());
  ASSERT_EQ(outputs.status, 200) << outputs.body;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(outputs.body["outputs"]["classes"][i], predictions[i]["classes"]);
    for (size_t c = 0; c < 11; ++c) {
      EXPECT_NEAR(outputs.body["outputs"]["probabilities"][i][c].get<double>(),
                  predictions[i]["probabilities"][c].get<double>(), 1e-6);
    }
  }

  // :classify: the top 3, best first, with names where the labels file has them.
  const json classify_body = {{"instances", {b64_instance(jpeg)}}, {"top_k", 3}};
  const Reply classified = post(*server_, "/v1/models/inception_v3:classify", classify_body.dump());
  ASSERT_EQ(classified.status, 200) << classified.body;
  const json& top = classified.body["result"][0];
  ASSERT_EQ(top.size(), 3u);
  const int64_t best = predictions[0]["classes"].get<int64_t>();
  const std::map<int64_t, std::string> names = {{0, "zero"}, {1, "one"}, {2, "two"}, {8, "eight"}};
  const std::string best_name = names.count(best) ? names.at(best) : std::to_string(best);
  EXPECT_EQ(top[0][0], best_name);
  EXPECT_NEAR(top[0][1].get<double>(), predictions[0]["probabilities"][best].get<double>(), 1e-6);
  EXPECT_GE(top[0][1].get<double>(), top[1][1].get<double>());
  EXPECT_GE(top[1][1].get<double>(), top[2][1].get<double>());
}

TEST_F(ServeApi, FloatInstancesAreTheModelInputAsIs) {
  // A preprocessed image as a float array gives what the same pixels give through b64: the
  // evaluation preprocessing of the JPEG, done here with the library, then sent as numbers.
  const std::string jpeg = test_image(3);
  std::vector<float> pixels(75 * 75 * 3);
  ASSERT_TRUE(fill_instance(b64_instance(jpeg), 0, InstanceOptions{75, 75, 0}, pixels.data()).ok());
  json image = json::array();
  for (int y = 0; y < 75; ++y) {
    json row = json::array();
    for (int x = 0; x < 75; ++x) {
      const float* p = &pixels[(y * 75 + x) * 3];
      row.push_back({p[0], p[1], p[2]});
    }
    image.push_back(std::move(row));
  }
  const Reply from_floats =
      post(*server_, "/v1/models/inception_v3:predict", json{{"instances", {image}}}.dump());
  const Reply from_jpeg = post(*server_, "/v1/models/inception_v3:predict",
                               json{{"instances", {b64_instance(jpeg)}}}.dump());
  ASSERT_EQ(from_floats.status, 200) << from_floats.body;
  ASSERT_EQ(from_jpeg.status, 200) << from_jpeg.body;
  for (size_t c = 0; c < 11; ++c) {
    EXPECT_NEAR(from_floats.body["predictions"][0]["probabilities"][c].get<double>(),
                from_jpeg.body["predictions"][0]["probabilities"][c].get<double>(), 1e-6);
  }
}

TEST_F(ServeApi, ErrorsAreJsonWithTheirStatusCodes) {
  const std::string predict = "/v1/models/inception_v3:predict";
  struct Case {
    const char* what;
    std::string path, body;
    int status;
    const char* message;
  };
  json wrong_shape = json::array({json::array({json::array({1.0, 2.0, 3.0})})});
  json strings = json::array();
  for (int y = 0; y < 75; ++y) {
    json row = json::array();
    for (int x = 0; x < 75; ++x) row.push_back({"a", "b", "c"});
    strings.push_back(row);
  }
  json pixels_0_255 = json::array();  // the raw pixel range instead of the preprocessed one
  for (int y = 0; y < 75; ++y) {
    json row = json::array();
    for (int x = 0; x < 75; ++x) row.push_back({255.0, 128.0, 0.0});
    pixels_0_255.push_back(row);
  }
  std::string bomb = test_image(4, 8, 8, true);  // a PNG whose IHDR claims 100000 x 100000
  for (int at : {16, 20}) {
    bomb[at] = 0, bomb[at + 1] = 1, bomb[at + 2] = static_cast<char>(0x86),
    bomb[at + 3] = static_cast<char>(0xa0);
  }
  const std::vector<Case> cases = {
      {"bad JSON", predict, "{\"instances\": [", 400, "not valid JSON"},
      {"no instances key", predict, "{\"foo\": 1}", 400, "no \"instances\""},
      {"empty instances", predict, "{\"instances\": []}", 400, "empty"},
      {"wrong shape", predict, json{{"instances", {wrong_shape}}}.dump(), 400, "[75][75][3]"},
      {"wrong dtype", predict, json{{"instances", {strings}}}.dump(), 400, "wrong dtype"},
      {"scalar instance", predict, "{\"instances\": [true]}", 400, "wrong dtype"},
      {"pixels not preprocessed", predict, json{{"instances", {pixels_0_255}}}.dump(), 400,
       "outside [-1, 1]"},
      {"bad base64", predict, "{\"instances\": [{\"b64\": \"@@@@\"}]}", 400, "base64"},
      {"not an image", predict,
       json{{"instances", {b64_instance("plain text, not pixels")}}}.dump(), 400, "JPEG or PNG"},
      {"bomb image", predict, json{{"instances", {b64_instance(bomb)}}}.dump(), 413,
       "100000x100000"},
      {"unknown model", "/v1/models/resnet:predict", "{\"instances\": [[1]]}", 404, "resnet"},
      {"unknown version", "/v1/models/inception_v3/versions/7:predict",
       json{{"instances", {b64_instance(test_image(1))}}}.dump(), 404, "version 7"},
      {"unknown path", "/v2/whatever", "{}", 404, "no such path"},
      {"unknown signature", predict,
       json{{"signature_name", "nope"}, {"instances", {b64_instance(test_image(1))}}}.dump(), 400,
       "unknown signature_name \"nope\""},
      {"more instances than the queue holds", predict,
       "{\"instances\": [" +
           [] {
             std::string many = "[0]";
             for (int i = 0; i < 5000; ++i) many += ",[0]";
             return many;
           }() +
           "]}",
       503, "can never fit the queue"},
      {"body too large", predict, std::string(2 << 20, ' '), 413, "larger than"},
  };
  for (const Case& c : cases) {
    const Reply reply = post(*server_, c.path, c.body);
    EXPECT_EQ(reply.status, c.status) << c.what << ": " << reply.body;
    EXPECT_NE(error_of(reply).find(c.message), std::string::npos) << c.what << ": " << reply.body;
  }
  EXPECT_EQ(get(*server_, "/v1/models/other").status, 404);
  // The server is still answering after all that.
  EXPECT_EQ(
      post(*server_, predict, json{{"instances", {b64_instance(test_image(1))}}}.dump()).status,
      200);
}

TEST(ServeNoModel, AnswersServiceUnavailableUntilACheckpointAppears) {
  TempDir dir;
  ServerOptions options;
  options.model_dir = dir.path();
  options.poll_interval = std::chrono::milliseconds(100);
  RunningServer server(options);
  const Reply before = get(server, "/v1/models/inception_v3");
  EXPECT_EQ(before.status, 503) << before.body;
  EXPECT_NE(error_of(before).find("no model"), std::string::npos) << before.body;
  EXPECT_EQ(get(server, "/healthz").status, 503);
  EXPECT_EQ(post(server, "/v1/models/inception_v3:predict", "{\"instances\": [[1]]}").status, 503);

  train_model(dir.path(), 2);
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = get(server, "/v1/models/inception_v3").status;
  }
  EXPECT_EQ(status, 200);
}

TEST(ServeOptions, AMissingModelDirIsRefused) {
  ServerOptions options;
  options.model_dir = "/nonexistent/model_dir";
  Result<std::unique_ptr<Server>> server = Server::create(options);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("/nonexistent/model_dir"), std::string::npos);
}

TEST(Base64, RoundTripsAndRefusesGarbage) {
  for (const std::string& text :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    Result<std::string> back = base64_decode(base64_encode(text));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, text);
  }
  EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
  EXPECT_FALSE(base64_decode("a").ok());
  EXPECT_FALSE(base64_decode("ab$d").ok());
  EXPECT_FALSE(base64_decode("ab=c").ok());
}

}  // namespace
}  // namespace ic
