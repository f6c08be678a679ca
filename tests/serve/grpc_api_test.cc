// The gRPC front end of the real server (in this process, on loopback ports, with a tiny
// trained model) through a real grpc++ client of TensorFlow Serving's services: Predict with
// both signatures and both float encodings, Classify, GetModelMetadata, GetModelStatus,
// HandleReloadConfigRequest, each error code, and REST and gRPC answering the same bits.
#include <cmath>
#include <limits>

#include "grpc_test_util.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;

constexpr int kSize = 75;  // the tiny model's images
constexpr int kClasses = 11;

class ServeGrpc : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    train_model(dir_->sub("model"), 2);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ServerOptions options;
    options.model_dir = dir_->sub("model");
    options.max_batch_size = 4;
    options.grpc_port = 0;
    options.grpc_max_message_bytes = 1 << 20;
    options.max_image_pixels = 200 * 200;
    options.label_names = {{0, "zero"}, {1, "one"}, {2, "two"}, {8, "eight"}};
    customize(options);
    server_ = std::make_unique<RunningServer>(options);
    client_ = std::make_unique<GrpcClient>(server_->server().grpc_port());
  }
  virtual void customize(ServerOptions&) {}

  grpc::Status predict(const tfs::PredictRequest& request, tfs::PredictResponse* response) {
    return client_->prediction->Predict(context_with_deadline().get(), request, response);
  }
  // A serving_default request of `images` for inception_v3.
  static tfs::PredictRequest float_request(const std::vector<std::vector<float>>& images,
                                           bool tensor_content) {
    tfs::PredictRequest request;
    set_spec(request.mutable_model_spec(), "inception_v3");
    (*request.mutable_inputs())["images"] = image_tensor(images, kSize, tensor_content);
    return request;
  }
  // REST's probabilities for b64 instances of `images`, as float32, sent in one request: the
  // same batch as the gRPC request they are compared with, so the same compiled graph runs
  // them (each batch-size bucket has its own, with convolution algorithms chosen by timing).
  std::vector<std::vector<float>> rest_probabilities(const std::vector<std::string>& images) {
    json instances = json::array();
    for (const std::string& image : images) instances.push_back(b64_instance(image));
    const Reply reply =
        post(*server_, "/v1/models/inception_v3:predict", json{{"instances", instances}}.dump());
    EXPECT_EQ(reply.status, 200) << reply.body;
    std::vector<std::vector<float>> out;
    for (const json& prediction : reply.body["predictions"]) {
      out.emplace_back();
      for (const json& p : prediction["probabilities"]) {
        out.back().push_back(static_cast<float>(p.get<double>()));
      }
    }
    return out;
  }
  static std::vector<float> row(const tensorflow::TensorProto& probabilities, int i) {
    return {probabilities.float_val().begin() + i * kClasses,
            probabilities.float_val().begin() + (i + 1) * kClasses};
  }

  static TempDir* dir_;
  std::unique_ptr<RunningServer> server_;
  std::unique_ptr<GrpcClient> client_;
};

TempDir* ServeGrpc::dir_ = nullptr;

TEST_F(ServeGrpc, PredictBothEncodingsGiveRestsBits) {
  const std::string first = test_image(1), second = test_image(2);
  const std::vector<std::vector<float>> images = {preprocessed(first, kSize),
                                                  preprocessed(second, kSize)};
  const std::vector<std::vector<float>> rest = rest_probabilities({first, second});
  ASSERT_EQ(rest.size(), 2u);
  for (bool tensor_content : {true, false}) {
    SCOPED_TRACE(tensor_content ? "tensor_content" : "float_val");
    tfs::PredictResponse response;
    const grpc::Status status = predict(float_request(images, tensor_content), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    const tensorflow::TensorProto& probabilities = response.outputs().at("probabilities");
    EXPECT_EQ(probabilities.dtype(), tensorflow::DT_FLOAT);
    ASSERT_EQ(probabilities.tensor_shape().dim_size(), 2);
    EXPECT_EQ(probabilities.tensor_shape().dim(0).size(), 2);
    EXPECT_EQ(probabilities.tensor_shape().dim(1).size(), kClasses);
    EXPECT_EQ(row(probabilities, 0), rest[0]);  // bit for bit
    EXPECT_EQ(row(probabilities, 1), rest[1]);
    const tensorflow::TensorProto& classes = response.outputs().at("classes");
    EXPECT_EQ(classes.dtype(), tensorflow::DT_INT64);
    ASSERT_EQ(classes.int64_val_size(), 2);
    const std::vector<float> p0 = row(probabilities, 0);
    EXPECT_EQ(classes.int64_val(0), std::max_element(p0.begin(), p0.end()) - p0.begin());
    EXPECT_EQ(response.model_spec().name(), "inception_v3");
    EXPECT_EQ(response.model_spec().signature_name(), "serving_default");
    EXPECT_EQ(response.model_spec().version().value(),
              server_->server().current_model()->version());
  }
}

TEST_F(ServeGrpc, PredictClassifySignatureDecodesImageBytesAsRestDoes) {
  const std::string jpeg = test_image(3), png = test_image(4, 60, 80, /*png=*/true);
  tfs::PredictRequest request;
  set_spec(request.mutable_model_spec(), "inception_v3", "classify");
  (*request.mutable_inputs())["image_bytes"] = bytes_tensor({jpeg, png});
  request.add_output_filter("probabilities");
  tfs::PredictResponse response;
  const grpc::Status status = predict(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.outputs().count("classes"), 0u);  // filtered out
  const std::vector<std::vector<float>> rest = rest_probabilities({jpeg, png});
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(row(response.outputs().at("probabilities"), 0), rest[0]);
  EXPECT_EQ(row(response.outputs().at("probabilities"), 1), rest[1]);
}

TEST_F(ServeGrpc, ClassifyAnswersTheTopFiveWithLabelNames) {
  tfs::ClassificationRequest request;
  set_spec(request.mutable_model_spec(), "inception_v3");
  const std::string jpeg = test_image(5);
  *request.mutable_input()->mutable_example_list()->add_examples() = image_example(jpeg);
  tfs::ClassificationResponse response;
  const grpc::Status status =
      client_->prediction->Classify(context_with_deadline().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.result().classifications_size(), 1);
  const tfs::Classifications& top = response.result().classifications(0);
  ASSERT_EQ(top.classes_size(), 5);
  const Reply rest = post(*server_, "/v1/models/inception_v3:classify",
                          json{{"instances", {b64_instance(jpeg)}}}.dump());
  ASSERT_EQ(rest.status, 200) << rest.body;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(top.classes(i).label(), rest.body["result"][0][i][0].get<std::string>());
    EXPECT_EQ(top.classes(i).score(),
              static_cast<float>(rest.body["result"][0][i][1].get<double>()));
  }
}

TEST_F(ServeGrpc, MetadataAndStatus) {
  tfs::GetModelMetadataRequest request;
  set_spec(request.mutable_model_spec(), "inception_v3");
  request.add_metadata_field("signature_def");
  tfs::GetModelMetadataResponse response;
  grpc::Status status =
      client_->prediction->GetModelMetadata(context_with_deadline().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  tfs::SignatureDefMap map;
  ASSERT_TRUE(response.metadata().at("signature_def").UnpackTo(&map));
  const tensorflow::SignatureDef& serving = map.signature_def().at("serving_default");
  EXPECT_EQ(serving.method_name(), "tensorflow/serving/predict");
  const tensorflow::TensorInfo& images = serving.inputs().at("images");
  EXPECT_EQ(images.name(), "images:0");
  EXPECT_EQ(images.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(images.tensor_shape().dim_size(), 4);
  EXPECT_EQ(images.tensor_shape().dim(0).size(), -1);
  EXPECT_EQ(images.tensor_shape().dim(1).size(), kSize);
  EXPECT_EQ(serving.outputs().at("classes").dtype(), tensorflow::DT_INT64);
  EXPECT_EQ(serving.outputs().at("probabilities").tensor_shape().dim(1).size(), kClasses);
  EXPECT_EQ(map.signature_def().at("classify").inputs().at("image_bytes").dtype(),
            tensorflow::DT_STRING);

  tfs::GetModelStatusRequest status_request;
  set_spec(status_request.mutable_model_spec(), "inception_v3");
  tfs::GetModelStatusResponse status_response;
  status = client_->models->GetModelStatus(context_with_deadline().get(), status_request,
                                           &status_response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(status_response.model_version_status_size(), 1);
  const tfs::ModelVersionStatus& version = status_response.model_version_status(0);
  EXPECT_EQ(version.state(), tfs::ModelVersionStatus::AVAILABLE);
  EXPECT_EQ(version.version(), server_->server().current_model()->version());
  EXPECT_EQ(version.status().error_code(), tensorflow::error::OK);
}

TEST_F(ServeGrpc, ReloadAppliesAConfigAndRefusesABadOneWithItsReason) {
  tfs::ReloadConfigRequest request;
  tfs::ModelConfig& model = *request.mutable_config()->mutable_model_config_list()->add_config();
  model.set_name("inception_v3");
  model.set_base_path(dir_->sub("model"));
  tfs::ReloadConfigResponse response;
  grpc::Status status =
      client_->models->HandleReloadConfigRequest(context_with_deadline().get(), request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status().error_code(), tensorflow::error::OK);
  // Renamed: the old name is gone, the new one serves the same model_dir.
  model.set_name("renamed");
  status =
      client_->models->HandleReloadConfigRequest(context_with_deadline().get(), request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  tfs::GetModelStatusRequest status_request;
  status_request.mutable_model_spec()->set_name("renamed");
  tfs::GetModelStatusResponse status_response;
  status = client_->models->GetModelStatus(context_with_deadline().get(), status_request,
                                           &status_response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  status_request.mutable_model_spec()->set_name("inception_v3");
  status = client_->models->GetModelStatus(context_with_deadline().get(), status_request,
                                           &status_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  // No base_path: refused, naming the model and the problem; the response says so too.
  model.set_name("resnet50");
  model.clear_base_path();
  status =
      client_->models->HandleReloadConfigRequest(context_with_deadline().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("resnet50"), std::string::npos);
  EXPECT_NE(status.error_message().find("empty base_path"), std::string::npos);
}

TEST_F(ServeGrpc, ErrorsHaveTensorFlowServingsCodes) {
  const std::vector<float> image = preprocessed(test_image(6), kSize);
  struct Case {
    const char* what;
    std::function<void(tfs::PredictRequest&)> change;
    grpc::StatusCode code;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"unknown model", [](tfs::PredictRequest& r) { r.mutable_model_spec()->set_name("nope"); },
       grpc::StatusCode::NOT_FOUND, "unknown model 'nope'"},
      {"unknown version",
       [](tfs::PredictRequest& r) { r.mutable_model_spec()->mutable_version()->set_value(12345); },
       grpc::StatusCode::NOT_FOUND, "version 12345"},
      {"unknown signature",
       [](tfs::PredictRequest& r) { r.mutable_model_spec()->set_signature_name("regress"); },
       grpc::StatusCode::INVALID_ARGUMENT, "unknown signature_name 'regress'"},
      {"wrong dtype",
       [](tfs::PredictRequest& r) {
         (*r.mutable_inputs())["images"].set_dtype(tensorflow::DT_INT32);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "must be DT_FLOAT, got DT_INT32"},
      {"wrong shape",
       [](tfs::PredictRequest& r) {
         (*r.mutable_inputs())["images"].mutable_tensor_shape()->mutable_dim(1)->set_size(74);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "must have shape [N, 75, 75, 3]"},
      {"unknown input",
       [](tfs::PredictRequest& r) { (*r.mutable_inputs())["pixels"] = r.inputs().at("images"); },
       grpc::StatusCode::INVALID_ARGUMENT, "unknown input 'pixels'"},
      {"NaN",
       [](tfs::PredictRequest& r) {
         (*r.mutable_inputs())["images"].set_float_val(5, std::numeric_limits<float>::quiet_NaN());
       },
       grpc::StatusCode::INVALID_ARGUMENT, "at [0][0][1][2] is NaN"},
      {"infinity",
       [](tfs::PredictRequest& r) {
         (*r.mutable_inputs())["images"].set_float_val(3 * kSize,
                                                       -std::numeric_limits<float>::infinity());
       },
       grpc::StatusCode::INVALID_ARGUMENT, "at [0][1][0][0] is infinite"},
      {"unknown output", [](tfs::PredictRequest& r) { r.add_output_filter("logits"); },
       grpc::StatusCode::INVALID_ARGUMENT, "unknown output 'logits'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    tfs::PredictRequest request = float_request({image}, /*tensor_content=*/false);
    c.change(request);
    tfs::PredictResponse response;
    const grpc::Status status = predict(request, &response);
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    EXPECT_NE(status.error_message().find(c.message), std::string::npos) << status.error_message();
  }

  // Over --grpc_max_message_bytes (1 MiB here): gRPC itself refuses it.
  tfs::PredictResponse response;
  grpc::Status status =
      predict(float_request(std::vector<std::vector<float>>(20, image), true), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();

  // An image over the pixel limit, refused before decoding.
  tfs::PredictRequest large;
  set_spec(large.mutable_model_spec(), "inception_v3", "classify");
  (*large.mutable_inputs())["image_bytes"] = bytes_tensor({test_image(7, 300, 300)});
  status = predict(large, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_NE(status.error_message().find("--max_image_pixels"), std::string::npos);

  // Bytes that are no image, and an Example without the image feature.
  (*large.mutable_inputs())["image_bytes"] = bytes_tensor({"not an image"});
  status = predict(large, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  tfs::ClassificationRequest classify;
  set_spec(classify.mutable_model_spec(), "inception_v3");
  classify.mutable_input()->mutable_example_list()->add_examples();
  tfs::ClassificationResponse classified;
  status = client_->prediction->Classify(context_with_deadline().get(), classify, &classified);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("image/encoded"), std::string::npos);
}

// A batch that waits longer than the client's deadline.
class ServeGrpcSlowBatches : public ServeGrpc {
  void customize(ServerOptions& options) override {
    options.batch_timeout = std::chrono::seconds(3);
    options.batch_wait_when_idle = true;
  }
};

TEST_F(ServeGrpcSlowBatches, AClientDeadlineThatPassesIsDeadlineExceeded) {
  tfs::PredictResponse response;
  const grpc::Status status = client_->prediction->Predict(
      context_with_deadline(std::chrono::milliseconds(500)).get(),
      float_request({preprocessed(test_image(8), kSize)}, true), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
}

// Batches that would wait 10 s to fill: a lone call, with nothing else on its way, runs at once.
class ServeGrpcLongBatchTimeout : public ServeGrpc {
  void customize(ServerOptions& options) override {
    options.batch_timeout = std::chrono::seconds(10);
  }
};

TEST_F(ServeGrpcLongBatchTimeout, ALoneCallDoesNotWaitOutTheTimeout) {
  tfs::PredictResponse response;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = client_->prediction->Predict(
      context_with_deadline(std::chrono::seconds(8)).get(),
      float_request({preprocessed(test_image(8), kSize)}, true), &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ServeGrpcNoModel, IsUnavailableUntilACheckpointAppears) {
  TempDir dir;
  ServerOptions options;
  options.model_dir = dir.path();
  options.grpc_port = 0;
  options.poll_interval = std::chrono::milliseconds(0);
  RunningServer server(options);
  GrpcClient client(server.server().grpc_port());
  tfs::GetModelStatusRequest request;
  set_spec(request.mutable_model_spec(), "inception_v3");
  tfs::GetModelStatusResponse response;
  const grpc::Status status =
      client.models->GetModelStatus(context_with_deadline().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST(ServeGrpcOnly, RunsWithoutRestAndShutsDown) {
  TempDir dir;
  ServerOptions options;
  options.model_dir = dir.path();
  options.port = -1;
  options.grpc_port = 0;
  Result<std::unique_ptr<Server>> server = Server::create(options);
  ASSERT_TRUE(server.ok()) << server.status().message();
  EXPECT_EQ((*server)->port(), -1);
  EXPECT_GT((*server)->grpc_port(), 0);
  std::thread runner([&] { (*server)->run(); });
  for (int i = 0; i < 500 && !(*server)->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE((*server)->is_running());
  (*server)->shutdown();
  runner.join();
  EXPECT_FALSE((*server)->is_running());
}

}  // namespace
}  // namespace ic
