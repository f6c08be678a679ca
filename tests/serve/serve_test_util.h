// The serve tests' common parts: a tiny trained model_dir (the real trainer, as tests/tools
// does), the real server started in this process on a free loopback port, images, requests.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "data/image_codec.h"
#include "serve/base64.h"
#include "serve/server.h"
#include "tools/tool_runner.h"

namespace ic::testing {

using nlohmann::json;

// A model_dir with a tiny Inception v3 (75x75, 11 classes) trained to `steps`.
inline void train_model(const std::string& model_dir, int steps) {
  const ToolOutput trained = train_tiny_model(model_dir, steps);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
}

// A JPEG (or PNG) whose pixels depend on `seed`, so different seeds predict differently.
inline std::string test_image(int seed, int height = 90, int width = 120, bool png = false) {
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        image.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>((x * (c + 1) * (seed + 3) + y * (seed * 7 + c + 1)) % 256);
      }
    }
  }
  return png ? encode_png(image).value() : encode_jpeg(image, 90).value();
}

inline json b64_instance(const std::string& bytes) { return {{"b64", base64_encode(bytes)}}; }

// The real server, in this process, on 127.0.0.1 and a free port.
class RunningServer {
 public:
  explicit RunningServer(ServerOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    options.backend.num_threads = 1;
    Result<std::unique_ptr<Server>> created = Server::create(options);
    if (!created.ok()) {
      ADD_FAILURE() << created.status().message();
      return;
    }
    server_ = std::move(*created);
    thread_ = std::thread([this] { server_->run(); });
    for (int i = 0; i < 500 && !server_->is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~RunningServer() { stop(); }
  void stop() {
    if (!server_) return;
    server_->shutdown();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }
  int port() const { return server_ ? server_->port() : 0; }
  // Throws where the server did not start (GoogleTest reports the exception as this test's
  // failure, beside the reason ADD_FAILURE gave above), rather than handing out a null server.
  Server& server() {
    if (!server_) throw std::runtime_error("the server did not start: see the failure above");
    return *server_;
  }

 private:
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

// One HTTP answer as text. The HTTP client lives in serve_test_util.cc, so that only one
// file of the suite compiles it.
struct HttpAnswer {
  int status = -1;  // -1: no answer at all (connection failed)
  std::string body;
  bool answered() const { return status != -1; }
};
// A GET or a JSON POST to 127.0.0.1:port (60 s read timeout).
HttpAnswer http_get(int port, const std::string& path);
HttpAnswer http_post(int port, const std::string& path, const std::string& body);

struct Reply {
  int status = -1;  // -1: no answer at all (connection failed)
  json body;
};

inline Reply to_reply(const HttpAnswer& answer) {
  Reply reply;
  reply.status = answer.status;
  if (answer.answered()) reply.body = json::parse(answer.body, nullptr, false);
  return reply;
}

inline Reply post(const RunningServer& server, const std::string& path, const std::string& body) {
  return to_reply(http_post(server.port(), path, body));
}

inline Reply get(const RunningServer& server, const std::string& path) {
  return to_reply(http_get(server.port(), path));
}

// The version /v1/models/<model> reports as served ("" when it answers no model).
inline std::string served_version(const RunningServer& server,
                                  const std::string& model = "inception_v3") {
  const Reply status = get(server, "/v1/models/" + model);
  if (status.status != 200) return "";
  return status.body["model_version_status"][0]["version"].get<std::string>();
}

// The names in `dir`.
inline std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename());
  return names;
}

// Runs export_model and returns the name of the version directory it added.
inline std::string export_once(const std::string& model_dir, const std::string& export_dir,
                               const std::string& format) {
  const std::set<std::string> before =
      std::filesystem::exists(export_dir) ? entries(export_dir) : std::set<std::string>();
  const ToolOutput run =
      run_tool("export_model",
               "--model_dir=" + model_dir + " --export_dir=" + export_dir + " --format=" + format);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (const std::string& name : entries(export_dir))
    if (!before.count(name)) return name;
  ADD_FAILURE() << "export_model added no version directory: " << run.output;
  return "";
}

// Two servers in float32, one on `model_dir` (its checkpoint) and one on `export_dir` (its
// newest export, `version`): the export's server reports that version, and a predict of two images
// under /v1/models/<model> gets the same classes from both and probabilities within `tolerance`.
// Auto precision would time float32 against bfloat16 in each server, and where the two are close
// (AVX-512 BF16 without AMX) the servers may choose differently. The checkpoint's predictions go to
// `checkpoint_predictions`.
inline void expect_export_answers_as_checkpoint(const std::string& model,
                                                const std::string& model_dir,
                                                const std::string& export_dir,
                                                const std::string& version, double tolerance,
                                                json* checkpoint_predictions = nullptr) {
  ServerOptions options;
  options.max_batch_size = 2;
  options.batch_timeout = std::chrono::milliseconds(1);
  options.precision = ServePrecision::float32;
  options.model_dir = model_dir;
  RunningServer on_checkpoint(options);
  options.model_dir = export_dir;
  RunningServer on_export(options);
  EXPECT_EQ(served_version(on_export, model), version);

  const std::string body =
      json{{"instances", {b64_instance(test_image(3)), b64_instance(test_image(8))}}}.dump();
  const std::string path = "/v1/models/" + model + ":predict";
  const Reply from_checkpoint = post(on_checkpoint, path, body);
  const Reply from_export = post(on_export, path, body);
  ASSERT_EQ(from_checkpoint.status, 200) << from_checkpoint.body.dump();
  ASSERT_EQ(from_export.status, 200) << from_export.body.dump();
  const json& expected = from_checkpoint.body["predictions"];
  const json& got = from_export.body["predictions"];
  if (checkpoint_predictions != nullptr) *checkpoint_predictions = expected;
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(expected.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]["classes"], expected[i]["classes"]) << i;
    const json& p = got[i]["probabilities"];
    const json& q = expected[i]["probabilities"];
    ASSERT_EQ(p.size(), q.size());
    for (size_t k = 0; k < p.size(); ++k)
      EXPECT_NEAR(p[k].get<double>(), q[k].get<double>(), tolerance) << i << " " << k;
  }
}

// The error message of an error reply ("" when there is none).
inline std::string error_of(const Reply& reply) {
  if (!reply.body.is_object() || !reply.body.contains("error")) return "";
  return reply.body["error"].get<std::string>();
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The serve program itself, started with its log in a file; SIGTERM ends it.
class ServeProcess {
 public:
  // address_space_bytes > 0: the program runs under that RLIMIT_AS (allocations beyond it fail
  // as they would on a machine out of memory, instead of the OOM killer ending the test).
  ServeProcess(const std::string& log, const std::vector<std::string>& flags,
               uint64_t address_space_bytes = 0)
      : log_(log) {
    std::vector<std::string> args = {bin_path("serve")};
    args.insert(args.end(), flags.begin(), flags.end());
    pid_ = fork();
    if (pid_ == 0) {
      if (freopen(log.c_str(), "w", stderr) == nullptr) _exit(127);
      if (address_space_bytes > 0) {
        const rlimit limit{address_space_bytes, address_space_bytes};
        if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(127);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && exit_code_ < -1) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // The port from the "listening on" line, or 0 after 30 s without one.
  int port() const {
    static const std::regex kListening(R"(listening on http://127\.0\.0\.1:(\d+))");
    for (int i = 0; i < 600; ++i) {
      std::smatch match;
      const std::string text = read_text(log_);
      if (std::regex_search(text, match, kListening)) return std::stoi(match[1]);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }
  void send_signal(int signal) { kill(pid_, signal); }
  pid_t pid() const { return pid_; }
  int terminate_and_wait() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return exit_code_;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int exit_code_ = -2;
};

}  // namespace ic::testing
