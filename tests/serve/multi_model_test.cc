// Several models from a --model_config_file (serve/model_manager.h), through the real server:
// two models over REST and gRPC, the version policies (latest N, specific, all) with
// /versions/N and /labels/L, the version states in the status answers, and config reloads (the
// file re-read, and HandleReloadConfigRequest) that add and remove a model while requests
// stream to a model that stays, with none of them failing.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "grpc_test_util.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;
namespace fs = std::filesystem;

class ServeModels : public ::testing::Test {
 protected:
  // One tiny export, copied as every version of every model (a copy is as good as a new
  // export: the version is its directory's number).
  static void SetUpTestSuite() {
    suite_ = new TempDir();
    train_model(suite_->sub("model"), 2);
    const ToolOutput run = run_tool("export_model", "--model_dir=" + suite_->sub("model") +
                                                        " --export_dir=" + suite_->sub("export") +
                                                        " --format=safetensors");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    for (const auto& made : fs::directory_iterator(suite_->sub("export"))) export_ = made.path();
  }
  static void TearDownTestSuite() {
    delete suite_;
    suite_ = nullptr;
  }

  // A base path `name` under this test's directory holding `versions`.
  std::string base_path(const std::string& name, const std::vector<int>& versions) {
    const std::string base = dir_.sub(name);
    fs::create_directories(base);
    for (int v : versions) fs::copy(export_, fs::path(base) / std::to_string(v));
    return base;
  }

  std::string write_config(const std::string& text) {
    const std::string path = dir_.sub("models.config");
    const std::string temp = path + ".tmp";
    std::ofstream(temp) << text;
    fs::rename(temp, path);  // whole, as a poll must never read half a file
    return path;
  }

  ServerOptions options_for(const std::string& config_file) {
    ServerOptions options;
    options.model_config_file = config_file;
    options.max_batch_size = 4;
    options.batch_timeout = std::chrono::milliseconds(1);
    options.grpc_port = 0;
    options.poll_interval = std::chrono::milliseconds(0);
    options.log = [this](const std::string& line) {
      std::lock_guard lock(log_mutex_);
      log_ += line + "\n";
    };
    return options;
  }

  std::string log() {
    std::lock_guard lock(log_mutex_);
    return log_;
  }

  static std::string predict_body() {
    return json{{"instances", {b64_instance(test_image(3))}}}.dump();
  }

  // The versions and states GET /v1/models/NAME lists, as "3:AVAILABLE 2:AVAILABLE".
  static std::string states(const RunningServer& server, const std::string& name) {
    const Reply status = get(server, "/v1/models/" + name);
    if (status.status != 200) return std::to_string(status.status);
    std::string text;
    for (const json& v : status.body["model_version_status"]) {
      text += (text.empty() ? "" : " ") + v["version"].get<std::string>() + ":" +
              v["state"].get<std::string>();
    }
    return text;
  }

  // Posts predicts to `path` from two threads until stop(): counts answers and failures.
  class Stream {
   public:
    Stream(const RunningServer& server, const std::string& path) {
      for (int c = 0; c < 2; ++c) {
        threads_.emplace_back([this, &server, path] {
          while (!stopping_) {
            const Reply reply = post(server, path, predict_body());
            if (reply.status == 200) {
              ++ok_;
            } else {
              ++failed_;
              std::lock_guard lock(mutex_);
              if (first_failure_.empty())
                first_failure_ = std::to_string(reply.status) + " " + reply.body.dump();
            }
          }
        });
      }
    }
    void stop() {
      stopping_ = true;
      for (std::thread& t : threads_) t.join();
      threads_.clear();
    }
    ~Stream() {
      if (!threads_.empty()) stop();
    }
    int ok() const { return ok_; }
    int failed() const { return failed_; }
    std::string first_failure() {
      std::lock_guard lock(mutex_);
      return first_failure_;
    }

   private:
    std::atomic<bool> stopping_{false};
    std::atomic<int> ok_{0}, failed_{0};
    std::mutex mutex_;
    std::string first_failure_;
    std::vector<std::thread> threads_;
  };

  // Waits up to 10 s for `done`.
  static bool eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 200; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return done();
  }

  static TempDir* suite_;  // the trained model and its export
  static fs::path export_;
  TempDir dir_;  // this test's base paths and config

  std::mutex log_mutex_;
  std::string log_;
};

TempDir* ServeModels::suite_ = nullptr;
fs::path ServeModels::export_;

TEST_F(ServeModels, TwoModelsWithPoliciesAndLabelsOverRestAndGrpc) {
  const std::string config = write_config(
      "model_config_list {\n"
      "  config { name: 'flowers' base_path: '" +
      base_path("flowers", {1, 2, 3}) +
      "'\n"
      "           model_platform: 'tensorflow'\n"
      "           model_version_policy { latest { num_versions: 2 } } }\n"
      "  config { name: 'mnist' base_path: '" +
      base_path("mnist", {1, 2, 3}) +
      "'\n"
      "           model_version_policy { specific { versions: 1 versions: 3 } }\n"
      "           version_labels { key: 'stable' value: 1 }\n"
      "           version_labels { key: 'canary' value: 3 } }\n"
      "  config { name: 'every' base_path: '" +
      base_path("every", {4, 7}) +
      "'\n"
      "           model_version_policy { all {} } }\n"
      "}\n");
  RunningServer server(options_for(config));

  EXPECT_EQ(states(server, "flowers"), "3:AVAILABLE 2:AVAILABLE");
  EXPECT_EQ(states(server, "mnist"), "3:AVAILABLE 1:AVAILABLE");
  EXPECT_EQ(states(server, "every"), "7:AVAILABLE 4:AVAILABLE");
  EXPECT_EQ(get(server, "/v1/models/flowers/versions/2").status, 200);
  EXPECT_EQ(
      get(server, "/v1/models/mnist/labels/stable").body["model_version_status"][0]["version"],
      "1");

  // No version: the highest; a version or a label: that one.
  const auto version_of = [&](const std::string& path) {
    const Reply meta = get(server, path + "/metadata");
    return meta.status == 200 ? meta.body["model_spec"]["version"].get<std::string>()
                              : std::to_string(meta.status);
  };
  EXPECT_EQ(version_of("/v1/models/flowers"), "3");
  EXPECT_EQ(version_of("/v1/models/flowers/versions/2"), "2");
  EXPECT_EQ(version_of("/v1/models/mnist/labels/stable"), "1");
  EXPECT_EQ(version_of("/v1/models/mnist/labels/canary"), "3");
  for (const char* path : {"/v1/models/flowers:predict", "/v1/models/flowers/versions/2:predict",
                           "/v1/models/mnist/labels/stable:predict",
                           "/v1/models/mnist/versions/3:classify", "/v1/models/every:predict"}) {
    const Reply reply = post(server, path, predict_body());
    EXPECT_EQ(reply.status, 200) << path << ": " << reply.body;
  }
  // Versions the policy does not serve, an unknown label, an unknown model.
  const Reply old = post(server, "/v1/models/flowers/versions/1:predict", predict_body());
  EXPECT_EQ(old.status, 404);
  EXPECT_NE(error_of(old).find("version 1"), std::string::npos) << old.body;
  EXPECT_EQ(post(server, "/v1/models/mnist/versions/2:predict", predict_body()).status, 404);
  const Reply label = post(server, "/v1/models/mnist/labels/beta:predict", predict_body());
  EXPECT_EQ(label.status, 404);
  EXPECT_NE(error_of(label).find("'beta'"), std::string::npos) << label.body;
  EXPECT_NE(error_of(label).find("'mnist'"), std::string::npos) << label.body;
  EXPECT_EQ(get(server, "/v1/models/flowers/labels/stable").status, 404);
  const Reply unknown = post(server, "/v1/models/resnet:predict", predict_body());
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(error_of(unknown).find("'flowers'"), std::string::npos) << unknown.body;

  // Predictions are counted by model.
  const std::string metrics = http_get(server.port(), "/metrics").body;
  EXPECT_NE(metrics.find("serve_model_requests_total{model=\"flowers\",code=\"200\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("serve_model_requests_total{model=\"mnist\",code=\"200\"} 2"),
            std::string::npos)
      << metrics;

  // gRPC: the same models, versions and labels.
  GrpcClient client(server.server().grpc_port());
  const std::vector<float> image = preprocessed(test_image(3), 75);
  const auto grpc_predict = [&](const std::function<void(tfs::ModelSpec*)>& spec,
                                tfs::PredictResponse* response) {
    tfs::PredictRequest request;
    spec(request.mutable_model_spec());
    (*request.mutable_inputs())["images"] = image_tensor({image}, 75, true);
    return client.prediction->Predict(context_with_deadline().get(), request, response);
  };
  tfs::PredictResponse response;
  grpc::Status status = grpc_predict([](tfs::ModelSpec* s) { s->set_name("flowers"); }, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.model_spec().name(), "flowers");
  EXPECT_EQ(response.model_spec().version().value(), 3);
  status = grpc_predict(
      [](tfs::ModelSpec* s) {
        s->set_name("mnist");
        s->set_version_label("stable");
      },
      &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.model_spec().name(), "mnist");
  EXPECT_EQ(response.model_spec().version().value(), 1);
  status = grpc_predict(
      [](tfs::ModelSpec* s) {
        s->set_name("flowers");
        s->mutable_version()->set_value(2);
      },
      &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.model_spec().version().value(), 2);
  status = grpc_predict(
      [](tfs::ModelSpec* s) {
        s->set_name("mnist");
        s->set_version_label("beta");
      },
      &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("'beta'"), std::string::npos) << status.error_message();

  tfs::GetModelStatusRequest status_request;
  status_request.mutable_model_spec()->set_name("mnist");
  tfs::GetModelStatusResponse status_response;
  status = client.models->GetModelStatus(context_with_deadline().get(), status_request,
                                         &status_response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(status_response.model_version_status_size(), 2);
  EXPECT_EQ(status_response.model_version_status(0).version(), 3);
  EXPECT_EQ(status_response.model_version_status(1).version(), 1);
  for (const tfs::ModelVersionStatus& v : status_response.model_version_status()) {
    EXPECT_EQ(v.state(), tfs::ModelVersionStatus::AVAILABLE);
    EXPECT_EQ(v.status().error_code(), tensorflow::error::OK);
  }
}

TEST_F(ServeModels, AVersionThatFailsToLoadIsEndWithItsError) {
  const std::string base = base_path("broken", {1, 2});
  std::ofstream(base + "/2/model.safetensors", std::ios::trunc) << "not safetensors";
  const std::string config = write_config(
      "model_config_list { config { name: 'broken' "
      "base_path: '" +
      base +
      "' "
      "model_version_policy { all {} } } }");
  RunningServer server(options_for(config));
  const Reply status = get(server, "/v1/models/broken");
  ASSERT_EQ(status.status, 200) << status.body;
  ASSERT_EQ(status.body["model_version_status"].size(), 2u) << status.body;
  const json& available = status.body["model_version_status"][0];
  EXPECT_EQ(available["version"], "1");
  EXPECT_EQ(available["state"], "AVAILABLE");
  EXPECT_EQ(available["status"]["error_code"], "OK");
  EXPECT_EQ(available["status"]["error_message"], "");
  const json& failed = status.body["model_version_status"][1];
  EXPECT_EQ(failed["version"], "2");
  EXPECT_EQ(failed["state"], "END");
  EXPECT_NE(failed["status"]["error_code"], "OK");
  EXPECT_NE(failed["status"]["error_message"].get<std::string>().find("model.safetensors"),
            std::string::npos)
      << status.body;
  EXPECT_EQ(post(server, "/v1/models/broken:predict", predict_body()).status, 200);
}

TEST_F(ServeModels, ARereadConfigAddsAndRemovesModelsWhileAnotherServesWithoutAFailure) {
  const std::string stays = base_path("stays", {1});
  const std::string leaves = base_path("leaves", {1});
  const std::string arrives = base_path("arrives", {5});
  const auto config_of = [](const std::vector<std::pair<std::string, std::string>>& models) {
    std::string text = "model_config_list {\n";
    for (const auto& [name, base] : models)
      text += "  config { name: '" + name + "' base_path: '" + base + "' }\n";
    return text + "}\n";
  };
  ServerOptions options =
      options_for(write_config(config_of({{"stays", stays}, {"leaves", leaves}})));
  options.model_config_poll = std::chrono::milliseconds(100);
  RunningServer server(options);
  ASSERT_EQ(post(server, "/v1/models/leaves:predict", predict_body()).status, 200);
  EXPECT_EQ(post(server, "/v1/models/arrives:predict", predict_body()).status, 404);

  Stream stream(server, "/v1/models/stays:predict");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  write_config(config_of({{"stays", stays}, {"arrives", arrives}}));
  EXPECT_TRUE(eventually([&] {
    return post(server, "/v1/models/arrives:predict", predict_body()).status == 200;
  })) << log();
  const Reply gone = post(server, "/v1/models/leaves:predict", predict_body());
  EXPECT_EQ(gone.status, 404) << gone.body;
  EXPECT_NE(error_of(gone).find("'leaves'"), std::string::npos) << gone.body;

  // A config that does not parse is logged and ignored: the old one keeps serving.
  write_config("model_config_list { config { name: 'stays' ");
  EXPECT_TRUE(eventually([&] {
    return log().find("ignored the new model config") != std::string::npos;
  })) << log();
  EXPECT_EQ(post(server, "/v1/models/arrives:predict", predict_body()).status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stream.stop();
  EXPECT_GT(stream.ok(), 0);
  EXPECT_EQ(stream.failed(), 0) << stream.first_failure();
  EXPECT_EQ(states(server, "arrives"), "5:AVAILABLE");
}

TEST_F(ServeModels, AReloadRequestAddsAndRemovesModelsWhileAnotherServesWithoutAFailure) {
  const std::string stays = base_path("stays", {1});
  const std::string leaves = base_path("leaves", {1});
  const std::string arrives = base_path("arrives", {2, 3});
  RunningServer server(
      options_for(write_config("model_config_list { config { name: 'stays' base_path: '" + stays +
                               "' } config { name: 'leaves' base_path: '" + leaves + "' } }")));
  GrpcClient client(server.server().grpc_port());
  Stream stream(server, "/v1/models/stays:predict");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  tfs::ReloadConfigRequest request;
  tfs::ModelConfigList& list = *request.mutable_config()->mutable_model_config_list();
  tfs::ModelConfig& kept = *list.add_config();
  kept.set_name("stays");
  kept.set_base_path(stays);
  tfs::ModelConfig& added = *list.add_config();
  added.set_name("arrives");
  added.set_base_path(arrives);
  added.mutable_model_version_policy()->mutable_latest()->set_num_versions(2);
  (*added.mutable_version_labels())["canary"] = 3;
  tfs::ReloadConfigResponse response;
  grpc::Status status =
      client.models->HandleReloadConfigRequest(context_with_deadline().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status().error_code(), tensorflow::error::OK);
  // Applied when the answer comes: the new model's versions are loaded, the old one is gone.
  EXPECT_EQ(states(server, "arrives"), "3:AVAILABLE 2:AVAILABLE");
  EXPECT_EQ(post(server, "/v1/models/arrives/labels/canary:predict", predict_body()).status, 200);
  EXPECT_EQ(post(server, "/v1/models/leaves:predict", predict_body()).status, 404);
  tfs::GetModelStatusRequest status_request;
  status_request.mutable_model_spec()->set_name("leaves");
  tfs::GetModelStatusResponse status_response;
  status = client.models->GetModelStatus(context_with_deadline().get(), status_request,
                                         &status_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();

  // A bad config (a name twice) is refused with its reason, and changes nothing.
  *list.add_config() = kept;
  status =
      client.models->HandleReloadConfigRequest(context_with_deadline().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("'stays' is listed twice"), std::string::npos)
      << status.error_message();
  // A base path that is not there: NOT_FOUND, naming it.
  list.mutable_config()->RemoveLast();
  list.mutable_config(1)->set_base_path(dir_.sub("nowhere"));
  status =
      client.models->HandleReloadConfigRequest(context_with_deadline().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("nowhere"), std::string::npos) << status.error_message();
  EXPECT_EQ(post(server, "/v1/models/arrives:predict", predict_body()).status, 200);

  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stream.stop();
  EXPECT_GT(stream.ok(), 0);
  EXPECT_EQ(stream.failed(), 0) << stream.first_failure();
}

TEST_F(ServeModels, StartUpRefusesABadConfigAndBothWaysOfNamingModels) {
  const std::string base = base_path("a", {1});
  ServerOptions options =
      options_for(write_config("model_config_list { config { name: 'a' base_path: '" + base +
                               "' } config { name: 'a' base_path: '" + base + "' } }"));
  Result<std::unique_ptr<Server>> created = Server::create(options);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("models.config"), std::string::npos)
      << created.status().message();
  EXPECT_NE(created.status().message().find("listed twice"), std::string::npos)
      << created.status().message();

  options = options_for(
      write_config("model_config_list { config { name: 'a' base_path: '" + base + "' } }"));
  options.model_dir = base;
  created = Server::create(options);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("not both"), std::string::npos)
      << created.status().message();

  // The serve program says so and exits non-zero.
  const std::string bad = write_config("model_config_list { config { name: 'a' } }");
  const std::string log_file = dir_.sub("serve.log");
  ServeProcess serve(log_file, {"--model_config_file=" + bad, "--port=0", "--rest_api_port=-1"});
  EXPECT_TRUE(eventually([&] {
    return read_text(log_file).find("empty base_path") != std::string::npos;
  })) << read_text(log_file);
  EXPECT_NE(serve.terminate_and_wait(), 0) << read_text(log_file);
  EXPECT_NE(read_text(log_file).find(bad), std::string::npos) << read_text(log_file);

  // tensorflow_model_server's --model_base_path is --model_dir's other name: the directory it
  // names is the one checked; naming two different directories is refused.
  const std::string missing = dir_.sub("no-such-model");
  const ToolOutput by_base_path =
      run_bounded("serve", "--model_base_path=" + missing + " --port=0 --rest_api_port=-1", 60);
  EXPECT_NE(by_base_path.exit_code, 0) << by_base_path.output;
  EXPECT_TRUE(by_base_path.contains(missing)) << by_base_path.output;
  const ToolOutput both = run_bounded(
      "serve", "--model_base_path=" + missing + " --model_dir=" + base + " --port=0", 60);
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_TRUE(both.contains("give one")) << both.output;
}

}  // namespace
}  // namespace ic
