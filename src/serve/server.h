// The prediction server: TensorFlow Serving's REST API over HTTP (serve/rest_frontend.h on
// http/server.h) and its gRPC API
// (serve/grpc_frontend.h), both on one ServingCore (serve/serving_core.h: dynamic batching, the
// newest checkpoint of a model_dir reloaded as new ones appear), /healthz, /metrics and a small
// web page at /. The REST routes:
//   GET  /v1/models/NAME[/versions/N]            model status: every version and its state
//                                                 (version: an export's number, or the
//                                                 global step)
//   GET  /v1/models/NAME[/versions/N]/metadata   signature_def
//   POST /v1/models/NAME[/versions/N]:predict    {"instances": ...} or {"inputs": ...}
//   POST /v1/models/NAME[/versions/N]:classify   top-k labels with scores
// and each with /labels/LABEL instead of /versions/N (a config's version_labels).
// Errors are {"error": "..."}: 400 bad JSON / image / shape / dtype, 404 unknown model or path,
// 413 body or image too large, 503 no model loaded yet, queue full, or timed out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "serve/precision_choice.h"
#include "serve/served_model.h"

namespace ic {

struct ServerOptions {
  // One model: the newest version in model_dir, named model_name.
  std::string model_dir;
  std::string model_name;  // empty: the checkpoint's model (e.g. "inception_v3")
  // Or several (serve/model_config.h): TF Serving's ModelServerConfig in protobuf text format,
  // re-read every model_config_poll (0: read once).
  std::string model_config_file;
  std::chrono::milliseconds model_config_poll{0};
  std::string host = "127.0.0.1";
  int port = 8501;     // REST; 0: any free port (see Server::port()); -1: no REST
  int grpc_port = -1;  // gRPC; 0: any free port (see Server::grpc_port()); -1: no gRPC
  int64_t grpc_max_message_bytes = 64 << 20;  // larger gRPC messages get RESOURCE_EXHAUSTED
  BackendOptions backend;
  // What the model computes in (serve/precision_choice.h); decided again at every (re)load.
  ServePrecision precision = ServePrecision::automatic;
  int64_t max_batch_size = 32;
  std::chrono::microseconds batch_timeout{2000};
  // Wait out batch_timeout even when no other request is being prepared (serve/batcher.h).
  bool batch_wait_when_idle = false;
  int64_t max_queue = 1024;              // instances waiting for the model
  size_t max_body_bytes = 64 << 20;      // larger bodies get 413
  int64_t max_image_pixels = 100000000;  // larger images get 413, refused before decoding
  std::chrono::milliseconds request_timeout{30000};  // also the REST body and write deadlines
  // REST connections (http/server.h): a request's head must arrive within header_timeout;
  // beyond the connection limits a connection gets 503; request bodies being received or
  // answered, all connections together, and gRPC messages being handled, stay under
  // max_inflight_bytes together (503 / UNAVAILABLE beyond it).
  std::chrono::milliseconds header_timeout{10000};
  size_t max_connections = 8192;
  size_t max_connections_per_client = 2048;
  size_t max_inflight_bytes = size_t{256} << 20;
  int http_threads = 32;  // REST requests handled at once; they also decode and preprocess
  // Each model's base path is checked for new versions this often (0: never).
  std::chrono::milliseconds poll_interval{1000};
  std::map<int64_t, std::string> label_names;   // for :classify and the web page
  std::function<void(const std::string&)> log;  // start-up, load and reload lines
};

class Server {
 public:
  // Checks the options, binds the port and loads the newest checkpoint (when there is none
  // yet, the server starts anyway and answers 503 until the watcher finds one).
  static Result<std::unique_ptr<Server>> create(const ServerOptions& options);
  ~Server();

  int port() const;       // REST (-1: off)
  int grpc_port() const;  // gRPC (-1: off)
  // Answers requests until shutdown(); returns once every request in flight has been answered.
  void run();
  // Stops accepting connections and calls; callable from any thread (run() then drains both
  // front ends and returns).
  void shutdown();

  // The first model's newest available version (null before its first load).
  std::shared_ptr<ServedModel> current_model() const;

  // Whether run() is accepting connections (tests wait for it).
  bool is_running() const;

  struct State;  // defined in server.cc; create() makes the only ones
  explicit Server(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ic
