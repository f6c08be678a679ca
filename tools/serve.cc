// serve: a REST prediction server for a trained model_dir, speaking TensorFlow Serving's API.
//   serve --model_dir=DIR [--port=8501] [--max_batch_size=32] [--labels_file=F]
// It serves the newest checkpoint and picks up newer ones without a restart. SIGTERM/SIGINT
// stop accepting connections, answer every request in flight, and exit 0.
#include <gflags/gflags.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "core/openmp_env.h"
#include "infer/classify.h"
#include "serve/server.h"
#include "train/stop_signal.h"

DEFINE_string(model_dir, "",
              "Directory (local or gs://) whose newest checkpoint, or newest "
              "<N>/model.safetensors export, is served (and reloaded)");
DEFINE_string(model_name, "",
              "The NAME in /v1/models/NAME; empty = the checkpoint's model (e.g. inception_v3)");
DEFINE_string(host, "127.0.0.1", "Address to listen on (0.0.0.0: every interface)");
DEFINE_int32(port, 8501, "TCP port (TensorFlow Serving's REST port is 8501; 0 = any free)");
DEFINE_string(device, "cpu", "cpu or cuda:N");
DEFINE_int32(num_threads, 0, "CPU compute threads for the model; 0 = all cores");
DEFINE_int32(http_threads, 32,
             "Connections served at once; these threads also decode and preprocess images");
DEFINE_int64(max_batch_size, 32, "Instances run together at most (graphs 1, 2, 4, ... this)");
DEFINE_int64(batch_timeout_micros, 2000,
             "How long the oldest queued instance waits for a batch to fill");
DEFINE_int64(max_queue, 1024, "Instances waiting for the model at most; more answer 503");
DEFINE_int64(max_body_bytes, 64 << 20, "Larger request bodies answer 413");
DEFINE_int64(max_image_pixels, 100000000,
             "Images whose header claims more pixels answer 413, before any decoding");
DEFINE_int64(request_timeout_ms, 30000, "A request not answered in this time answers 503");
DEFINE_int64(poll_interval_ms, 1000,
             "How often model_dir is checked for a newer checkpoint; 0 = never reload");
DEFINE_string(labels_file, "",
              "Label names for :classify: '<label> <name>' lines or one name "
              "per line");

namespace {

int serve_main(int argc, char** argv) {
  using namespace ic;
  static const std::vector<std::string> kFlagFiles = {"serve.cc"};
  const ProgramHelp help{"serve",
                         "a REST prediction server (TensorFlow Serving's API) for a trained "
                         "model_dir, with dynamic batching",
                         "serve --model_dir=MODEL_DIR --port=8501 --labels_file=LABELS", ""};
  if (std::optional<int> exit_code = start_tool(help, kFlagFiles, argc, argv)) return *exit_code;
  auto bad = [](const std::string& flag, int64_t value, const char* allowed) {
    std::cerr << "serve: bad value " << value << " for --" << flag << " (allowed: " << allowed
              << ")" << std::endl;
    return 2;
  };
  if (FLAGS_model_dir.empty()) {
    std::cerr << "serve: give --model_dir (--help lists the flags)" << std::endl;
    return 2;
  }
  if (FLAGS_port < 0 || FLAGS_port > 65535) return bad("port", FLAGS_port, "0 to 65535");
  if (FLAGS_num_threads < 0) return bad("num_threads", FLAGS_num_threads, "0 or more");
  if (FLAGS_http_threads < 1) return bad("http_threads", FLAGS_http_threads, "1 or more");
  if (FLAGS_max_batch_size < 1 || FLAGS_max_batch_size > 4096)
    return bad("max_batch_size", FLAGS_max_batch_size, "1 to 4096");
  if (FLAGS_batch_timeout_micros < 0)
    return bad("batch_timeout_micros", FLAGS_batch_timeout_micros, "0 or more");
  if (FLAGS_max_queue < 1) return bad("max_queue", FLAGS_max_queue, "1 or more");
  if (FLAGS_max_body_bytes < 1) return bad("max_body_bytes", FLAGS_max_body_bytes, "1 or more");
  if (FLAGS_max_image_pixels < 1)
    return bad("max_image_pixels", FLAGS_max_image_pixels, "1 or more");
  if (FLAGS_request_timeout_ms < 1)
    return bad("request_timeout_ms", FLAGS_request_timeout_ms, "1 or more");
  if (FLAGS_poll_interval_ms < 0)
    return bad("poll_interval_ms", FLAGS_poll_interval_ms, "0 or more");

  ServerOptions options;
  options.model_dir = FLAGS_model_dir;
  options.model_name = FLAGS_model_name;
  options.host = FLAGS_host;
  options.port = FLAGS_port;
  const std::optional<BackendOptions> backend =
      tool_backend_options("serve", FLAGS_device, FLAGS_num_threads);
  if (!backend) return 2;
  options.backend = *backend;
  options.http_threads = FLAGS_http_threads;
  options.max_batch_size = FLAGS_max_batch_size;
  options.batch_timeout = std::chrono::microseconds(FLAGS_batch_timeout_micros);
  options.max_queue = FLAGS_max_queue;
  options.max_body_bytes = static_cast<size_t>(FLAGS_max_body_bytes);
  options.max_image_pixels = FLAGS_max_image_pixels;
  options.request_timeout = std::chrono::milliseconds(FLAGS_request_timeout_ms);
  options.poll_interval = std::chrono::milliseconds(FLAGS_poll_interval_ms);
  if (!FLAGS_labels_file.empty()) {
    Result<std::map<int64_t, std::string>> names = read_label_names(FLAGS_labels_file);
    if (!names.ok()) {
      std::cerr << "serve: " << names.status().message() << std::endl;
      return exit_code_for(names.status());
    }
    options.label_names = std::move(*names);
  }
  options.log = [](const std::string& line) { std::cerr << "serve: " << line << std::endl; };

  install_stop_signal_handlers("serve", /*timeout_secs=*/60);
  Result<std::unique_ptr<Server>> server = Server::create(options);
  if (!server.ok()) {
    std::cerr << "serve: " << server.status().message() << std::endl;
    return exit_code_for(server.status());
  }
  std::cerr << "serve: listening on http://" << FLAGS_host << ":" << (*server)->port()
            << " (model_dir " << FLAGS_model_dir << ", batches up to " << FLAGS_max_batch_size
            << ", batch timeout " << FLAGS_batch_timeout_micros << " us)" << std::endl;
  // The signal handler only sets a flag; this thread turns it into a shutdown. Asked again
  // until run() has returned, in case the signal came before the server was accepting.
  std::atomic<bool> finished{false};
  std::thread stopper([&] {
    while (!finished.load()) {
      if (stop_requested()) {
        acknowledge_stop();
        (*server)->shutdown();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  (*server)->run();
  finished = true;
  stopper.join();
  if (stop_requested())
    std::cerr << "serve: stopped; every request in flight was answered" << std::endl;
  server->reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ic::use_short_openmp_spin(argv);
  return ic::run_guarded("serve", [&] { return serve_main(argc, argv); });
}
