// serve's --precision: the precision a load resolves to is in the load line, /healthz and
// /metrics (never in TF Serving's model status, whose schema strict clients check); auto gives
// float32 where bf16 would compute in float32; bfloat16 answers as float32 does within a
// tolerance; int8 refuses a float checkpoint and, on a model with an int8 table, answers.
#include <cmath>
#include <cstring>
#include <mutex>

#include "graph/quantize_pass.h"
#include "runtime/inference_model.h"
#include "serve/precision_choice.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;

// The server's log lines, kept for the test to read.
struct PrecisionLog {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::string all() {
    std::lock_guard lock(mutex);
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    return text;
  }
};

ServerOptions options_for(const std::string& model_dir, ServePrecision precision,
                          PrecisionLog* log) {
  ServerOptions options;
  options.model_dir = model_dir;
  options.max_batch_size = 2;
  options.batch_timeout = std::chrono::milliseconds(1);
  options.poll_interval = std::chrono::milliseconds(0);
  options.precision = precision;
  options.log = [log](const std::string& line) {
    std::lock_guard lock(log->mutex);
    log->lines.push_back(line);
  };
  return options;
}

BackendOptions one_thread() {
  BackendOptions options;
  options.num_threads = 1;
  return options;
}

class ServePrecisionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    train_model(dir_->sub("model"), 2);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string model_dir() { return dir_->sub("model"); }
  static TempDir* dir_;
};
TempDir* ServePrecisionTest::dir_ = nullptr;

TEST_F(ServePrecisionTest, Float32IsInTheLoadLineHealthzAndMetricsNotInTheModelStatus) {
  PrecisionLog log;
  RunningServer server(options_for(model_dir(), ServePrecision::float32, &log));
  ASSERT_NE(server.server().current_model(), nullptr) << log.all();
  EXPECT_EQ(server.server().current_model()->precision(), InferencePrecision::float32);
  EXPECT_NE(log.all().find("precision float32 (asked for)"), std::string::npos) << log.all();

  const std::string metrics = http_get(server.port(), "/metrics").body;
  EXPECT_NE(metrics.find("serve_model_precision{model=\"inception_v3\",precision=\"float32\"} 1\n"),
            std::string::npos)
      << metrics;
  const Reply health = get(server, "/healthz");
  ASSERT_EQ(health.status, 200);
  EXPECT_EQ(health.body["precision"], "float32") << health.body.dump();
  // TF Serving's GetModelStatus answer keeps its one top-level field.
  const Reply status = get(server, "/v1/models/inception_v3");
  ASSERT_EQ(status.status, 200);
  EXPECT_EQ(status.body.size(), 1u) << status.body.dump();
  EXPECT_TRUE(status.body.contains("model_version_status")) << status.body.dump();
}

TEST_F(ServePrecisionTest, AutoIsFloat32WhereTheBackendHasNoNativeBf16) {
  PrecisionLog log;
  RunningServer server(options_for(model_dir(), ServePrecision::automatic, &log));
  ASSERT_NE(server.server().current_model(), nullptr) << log.all();
  Result<std::unique_ptr<Backend>> backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  const std::string metrics = http_get(server.port(), "/metrics").body;
  if ((*backend)->has_native_bf16()) {
    // Timed at start-up: either may win, and the line says what each took.
    EXPECT_NE(log.all().find("(auto: a batch of 2 took "), std::string::npos) << log.all();
  } else {
    EXPECT_EQ(server.server().current_model()->precision(), InferencePrecision::float32);
    EXPECT_NE(
        log.all().find("precision float32 (auto: this backend has no native bf16 convolutions)"),
        std::string::npos)
        << log.all();
    EXPECT_NE(metrics.find("precision=\"float32\"} 1\n"), std::string::npos) << metrics;
  }
}

// The logits of `count` zero-and-ramp images through `runner`.
std::vector<float> logits_of(InferenceRunner& runner, int64_t count) {
  std::vector<float> images(static_cast<size_t>(count * runner.image_floats()));
  for (size_t i = 0; i < images.size(); ++i) images[i] = float(i % 200) / 100.f - 1.f;
  std::vector<float> logits(static_cast<size_t>(count * runner.num_classes()));
  runner.run(count, images.data(), logits.data());
  return logits;
}

TEST_F(ServePrecisionTest, TheTimedChoiceAndBfloat16AnswerAsFloat32Does) {
  Result<InferenceModel> model = load_for_inference(model_dir(), "");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<std::unique_ptr<Backend>> backend = make_backend(one_thread());
  ASSERT_TRUE(backend.ok());
  Result<PrecisionRunner> f32 =
      compile_in_precision(**backend, *model, {1, 2}, ServePrecision::float32);
  ASSERT_TRUE(f32.ok()) << f32.status().message();
  Result<PrecisionRunner> bf16 =
      compile_in_precision(**backend, *model, {1, 2}, ServePrecision::bfloat16);
  ASSERT_TRUE(bf16.ok()) << bf16.status().message();
  EXPECT_EQ(bf16->precision, InferencePrecision::bfloat16);
  // auto's timing step, run here even where auto itself would skip it.
  Result<PrecisionRunner> timed = faster_of_float32_and_bfloat16(**backend, *model, {1, 2}, 2);
  ASSERT_TRUE(timed.ok()) << timed.status().message();
  EXPECT_NE(timed->reason.find("auto: a batch of 2 took "), std::string::npos) << timed->reason;
  // bfloat16 only where some layer really runs in it (every convolution timed faster in float32
  // makes the bf16 graph the float32 one).
  if (timed->precision == InferencePrecision::bfloat16) {
    EXPECT_GT(timed->runner->pass_stats().bf16_activations, 0) << timed->reason;
  }

  const std::vector<float> expected = logits_of(*f32->runner, 2);
  // bf16 rounds each convolution's inputs to 8 bits of mantissa where it is real; where it
  // computes in float32 the answers agree to float32's rounding (each runner times its own
  // convolution plans, and Winograd and direct convolution round differently).
  const float tolerance = (*backend)->has_native_bf16() ? 0.05f : 1e-4f;
  for (PrecisionRunner* other : {&*bf16, &*timed}) {
    const std::vector<float> got = logits_of(*other->runner, 2);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], tolerance * (1.f + std::fabs(expected[i])))
          << precision_name(other->precision) << " logit " << i;
  }
}

TEST_F(ServePrecisionTest, Int8RefusesAFloatCheckpointNamingIt) {
  PrecisionLog log;
  RunningServer server(options_for(model_dir(), ServePrecision::int8, &log));
  EXPECT_EQ(server.server().current_model(), nullptr);
  EXPECT_NE(log.all().find("is not an int8 export"), std::string::npos) << log.all();
  EXPECT_NE(log.all().find(model_dir()), std::string::npos) << log.all();
  EXPECT_EQ(get(server, "/healthz").status, 503);
}

// Empty when this build's backend computes int8 convolutions (ops.h's Int8Conv): one 1x1
// convolution of x = 10 at input scale 0.1 (1.0) by w = 0.5 gives 0.5. Else why not.
std::string int8_convolution_missing(Backend& backend) {
  Conv2dDesc desc;
  desc.input = Shape{1, 1, 1, 1};
  desc.out_channels = 1;
  desc.training = false;
  desc.needs_input_grad = false;
  desc.constant_weights = true;
  desc.int8 = Int8Conv{0.1f, {0.5f / kInt8WeightMax}};
  Result<std::unique_ptr<OpKernel>> kernel = backend.compile(desc);
  if (!kernel.ok()) return kernel.status().message();
  Result<DeviceBuffer> x = backend.allocate(64), w = backend.allocate(64), y = backend.allocate(64);
  Result<DeviceBuffer> workspace = backend.allocate((*kernel)->workspace_bytes() + 64);
  if (!x.ok() || !w.ok() || !y.ok() || !workspace.ok()) return "cannot allocate the probe";
  // x = 10 and zeros after it, so a kernel that reads these bytes as a float reads no NaN.
  const uint8_t q[4] = {10, 0, 0, 0};
  const float weight = 0.5f;
  backend.upload(x->data(), q, sizeof q);
  backend.upload(w->data(), &weight, sizeof weight);
  OpBindings bindings;
  bindings.inputs = {x->data()};
  bindings.outputs = {y->data()};
  bindings.params = {w->data()};
  bindings.workspace = workspace->data();
  if (const Status bound = (*kernel)->bind(bindings); !bound.ok()) return bound.message();
  (*kernel)->forward(StepContext{});
  float result = 0.f;
  backend.download(&result, y->data(), sizeof result);
  if (!(std::fabs(result - 0.5f) <= 1e-3f))
    return "a 1x1 int8 convolution of 1.0 by 0.5 gave " + std::to_string(result) +
           ": the convolution kernel does not compute Int8Conv";
  return "";
}

// The trained model with every weight zero except the logits biases, and an int8 table for
// every convolution after the first (whose input, the images, can be negative): every
// activation is 0, which int8 holds exactly, so int8 and float32 give exactly the biases.
InferenceModel zero_model_with_int8_table(InferenceModel model) {
  const char* kBiases = "InceptionV3/Logits/Conv2d_1c_1x1/biases";
  for (auto& [name, entry] : model.weights) {
    std::vector<float> values(entry.bytes.size() / sizeof(float), 0.f);
    if (name.find("moving_variance") != std::string::npos)
      std::fill(values.begin(), values.end(), 1.f);
    if (name == kBiases)
      for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * float(i) - 1.f;
    std::memcpy(entry.bytes.data(), values.data(), entry.bytes.size());
  }
  Result<Graph> graph = build_inference_graph(model, 1);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  QuantizationTable table;
  for (const Node& node : graph->nodes) {
    const Conv2dDesc* conv = std::get_if<Conv2dDesc>(&node.desc);
    if (conv == nullptr || node.name.find("AuxLogits") != std::string::npos ||
        node.name.find("Conv2d_1a_3x3") != std::string::npos)
      continue;
    const std::vector<float> zeros(
        static_cast<size_t>(conv->kernel_h * conv->kernel_w * conv->input.c() * conv->out_channels),
        0.f);
    table.layers[node.name] = {1.f / kInt8ActivationMax,
                               per_channel_weight_scales(zeros, conv->out_channels)};
  }
  model.int8 = std::move(table);
  return model;
}

TEST_F(ServePrecisionTest, Int8OnAModelWithAnInt8TableAnswersItsLogits) {
  Result<std::unique_ptr<Backend>> backend = make_backend(one_thread());
  ASSERT_TRUE(backend.ok());
  if (const std::string missing = int8_convolution_missing(**backend); !missing.empty())
    GTEST_SKIP() << "no int8 convolution kernels in this build: " << missing;
  Result<InferenceModel> trained = load_for_inference(model_dir(), "");
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  const InferenceModel model = zero_model_with_int8_table(std::move(*trained));
  Result<PrecisionRunner> int8 =
      compile_in_precision(**backend, model, {1, 2}, ServePrecision::int8);
  ASSERT_TRUE(int8.ok()) << int8.status().message();
  EXPECT_EQ(int8->precision, InferencePrecision::int8);
  Result<PrecisionRunner> f32 =
      compile_in_precision(**backend, model, {1, 2}, ServePrecision::float32);
  ASSERT_TRUE(f32.ok()) << f32.status().message();
  const std::vector<float> expected = logits_of(*f32->runner, 2);
  const std::vector<float> got = logits_of(*int8->runner, 2);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_FLOAT_EQ(expected[i], 0.25f * float(i % 11) - 1.f) << i;
    EXPECT_FLOAT_EQ(got[i], expected[i]) << i;
  }
}

// The serve program: the listening line says the precision, /metrics too.
TEST_F(ServePrecisionTest, TheProgramSaysItsPrecisionInItsStartUpLineAndMetrics) {
  Result<std::unique_ptr<Backend>> backend = make_backend(one_thread());
  ASSERT_TRUE(backend.ok());
  for (const char* flag : {"float32", "auto"}) {
    const std::string log = dir_->sub(std::string("serve-") + flag + ".log");
    ServeProcess serve(
        log, {"--model_dir=" + model_dir(), "--port=0", "--rest_api_port=-1", "--num_threads=1",
              "--max_batch_size=2", std::string("--precision=") + flag});
    const int port = serve.port();
    ASSERT_GT(port, 0) << read_text(log);
    const std::string text = read_text(log);
    if (std::string(flag) == "float32" || !(*backend)->has_native_bf16()) {
      EXPECT_NE(text.find("listening on http://127.0.0.1:" + std::to_string(port) + " (model_dir " +
                          model_dir() + ", precision float32,"),
                std::string::npos)
          << text;
      const HttpAnswer metrics = http_get(port, "/metrics");
      ASSERT_TRUE(metrics.answered());
      EXPECT_NE(metrics.body.find(
                    "serve_model_precision{model=\"inception_v3\",precision=\"float32\"} 1"),
                std::string::npos)
          << metrics.body;
    } else {
      EXPECT_NE(text.find("(auto: a batch of 2 took "), std::string::npos) << text;
    }
    EXPECT_EQ(serve.terminate_and_wait(), 0) << read_text(log);
  }
  const ToolOutput bad = run_tool("serve", "--model_dir=" + model_dir() + " --precision=fp16");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(bad.contains("allowed: auto, float32, bfloat16, int8")) << bad.output;
}

}  // namespace
}  // namespace ic
