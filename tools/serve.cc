// serve: a prediction server for a trained model_dir, speaking TensorFlow Serving's gRPC and
// REST APIs, with tensorflow_model_server's flag names:
//   serve --model_dir=DIR [--port=8500 (gRPC)] [--rest_api_port=8501] [--max_batch_size=32]
//         [--labels_file=F] [--precision=auto]
//   serve --model_config_file=FILE [--model_config_file_poll_wait_seconds=N] ...
// It serves the newest checkpoint (or, from a config, each model's versions its policy
// selects) and picks up newer ones without a restart. SIGTERM/SIGINT
// stop accepting connections, answer every request in flight, and exit 0.
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "core/openmp_env.h"
#include "core/stop_signal.h"
#include "data/image_codec.h"
#include "infer/classify.h"
#include "runtime/precision.h"
#include "serve/server.h"

namespace ic {
// --precision's names, in the order its help and its error list them.
template <>
struct Choices<ServePrecision> {
  static constexpr std::array<ChoiceName<ServePrecision>, 4> names = {
      {{ServePrecision::automatic, "auto"},
       {ServePrecision::float32, "float32"},
       {ServePrecision::bfloat16, "bfloat16"},
       {ServePrecision::int8, "int8"}}};
};
}  // namespace ic

namespace {

struct ServeFlags {
  std::string model_dir, model_name;
  std::string model_base_path;  // tensorflow_model_server's name for --model_dir
  std::string model_config_file;
  int64_t model_config_file_poll_wait_seconds = 0;
  int64_t file_system_poll_wait_seconds = 1;
  std::string host = "127.0.0.1";
  int32_t port = 8500;           // gRPC
  int32_t rest_api_port = 8501;  // 0: no REST; -1: any free port
  int64_t grpc_max_message_bytes = 64 << 20;
  ic::DeviceChoice device{ic::DeviceChoice::Kind::cpu, std::nullopt};
  int32_t num_threads = 0;
  int32_t http_threads = 32;
  int64_t max_batch_size = 32;
  int64_t batch_timeout_micros = 2000;
  bool batch_wait_when_idle = false;
  int64_t max_queue = 1024;
  int64_t max_body_bytes = 64 << 20;
  int64_t max_image_pixels = ic::kDefaultMaxImagePixels;
  int64_t request_timeout_ms = 30000;
  int64_t header_timeout_ms = 10000;
  int64_t max_connections = 8192;
  int64_t max_connections_per_client = 2048;
  int64_t max_inflight_bytes = int64_t{256} << 20;
  int64_t poll_interval_ms = -1;  // -1: file_system_poll_wait_seconds
  std::string labels_file;
  ic::ServePrecision precision = ic::ServePrecision::automatic;
};

// Every range serve's options may take is checked here, once (Server::create trusts them).
const ic::FlagTable<ServeFlags>& serve_flags() {
  using namespace ic::flag_entries;
  using O = ServeFlags;
  static const ic::FlagTable<O> table({
      text("model_dir", &O::model_dir,
           "Directory (local or gs://) whose newest checkpoint, or newest "
           "<N>/model.safetensors export, is served (and reloaded)"),
      text("model_base_path", &O::model_base_path,
           "tensorflow_model_server's name for --model_dir (the same directory; give one)"),
      text("model_name", &O::model_name,
           "The NAME in /v1/models/NAME; empty = the checkpoint's model (e.g. inception_v3)"),
      text("model_config_file", &O::model_config_file,
           "Several models (local or gs://): TensorFlow Serving's ModelServerConfig in protobuf "
           "text format (model_config_list with name, base_path, model_version_policy, "
           "version_labels); instead of --model_dir and --model_name"),
      number("model_config_file_poll_wait_seconds", &O::model_config_file_poll_wait_seconds,
             at_least(0),
             "How often --model_config_file is read again (models added are loaded, removed "
             "ones unloaded; a bad file is logged and ignored); 0 = read once"),
      text("host", &O::host, "Address to listen on (0.0.0.0: every interface)"),
      number("port", &O::port, from_to(0, 65535),
             "gRPC port (TensorFlow Serving's API; tensorflow_model_server's flag; 0 = any free). "
             "Before the gRPC front end this flag was the REST port: that is --rest_api_port now"),
      number("rest_api_port", &O::rest_api_port, from_to(-1, 65535),
             "REST port (TensorFlow Serving's REST API); 0 = no REST, -1 = any free port"),
      number("grpc_max_message_bytes", &O::grpc_max_message_bytes, from_to(1, INT32_MAX),
             "Larger gRPC requests answer RESOURCE_EXHAUSTED (the default fits a batch of 32 "
             "299x299x3 float images)"),
      device(&O::device, EmptyDevice::refused, "Where the model runs (cuda: the first GPU)"),
      number("num_threads", &O::num_threads, at_least(0),
             "CPU compute threads for the model; 0 = all cores (more than the cores: capped, "
             "with a notice)"),
      number("http_threads", &O::http_threads, at_least(1),
             "REST requests handled at once (a connection still sending or reading holds no "
             "thread); these threads also decode and preprocess images"),
      number("max_batch_size", &O::max_batch_size, from_to(1, 4096),
             "Instances run together at most (graphs 1, 2, 4, ... this)"),
      number("batch_timeout_micros", &O::batch_timeout_micros, at_least(0),
             "How long the oldest queued instance waits for a batch to fill, while other "
             "requests are being prepared"),
      boolean("batch_wait_when_idle", &O::batch_wait_when_idle,
              "Wait out --batch_timeout_micros even when no other request is being prepared "
              "(TF Serving's batcher): a lone request then waits the whole timeout"),
      number("max_queue", &O::max_queue, at_least(1),
             "Instances waiting for the model at most; more answer 503"),
      number("max_body_bytes", &O::max_body_bytes, at_least(1), "Larger request bodies answer 413"),
      number("max_image_pixels", &O::max_image_pixels, at_least(1),
             "Images whose header claims more pixels answer 413, before any decoding"),
      number("request_timeout_ms", &O::request_timeout_ms, at_least(1),
             "A request not answered in this time answers 503; also how long a REST body may "
             "take to arrive and an answer to be read"),
      number("header_timeout_ms", &O::header_timeout_ms, at_least(1),
             "A REST request's head (request line and headers) must arrive within this, else "
             "408 and the connection is closed"),
      number("max_connections", &O::max_connections, at_least(1),
             "Open REST connections at most; more are answered 503 and closed"),
      number("max_connections_per_client", &O::max_connections_per_client, at_least(1),
             "Open REST connections from one client address at most; more are answered 503"),
      number("max_inflight_bytes", &O::max_inflight_bytes, at_least(1),
             "Request bytes held at once, REST and gRPC together: REST bodies being received or "
             "answered (beyond it: 503 before the body is read) and gRPC messages being handled "
             "(beyond it: UNAVAILABLE)"),
      number("file_system_poll_wait_seconds", &O::file_system_poll_wait_seconds, at_least(0),
             "How often each model's base path (--model_dir) is checked for new versions; "
             "0 = never reload"),
      number("poll_interval_ms", &O::poll_interval_ms, at_least(-1),
             "The same check's interval in milliseconds, winning over "
             "--file_system_poll_wait_seconds when 0 or more (0 = never reload); -1 = that "
             "flag's"),
      text("labels_file", &O::labels_file,
           "Label names for :classify: '<label> <name>' lines or one name per line"),
      choice("precision", &O::precision,
             "What the model computes in: auto (bfloat16 where the backend has native bf16 "
             "convolutions and a start-up timing finds it faster, else float32), float32, "
             "bfloat16, or int8 (an int8 export only)"),
  });
  return table;
}

int serve_main(int argc, char** argv) {
  using namespace ic;
  ServeFlags flags;
  const ProgramHelp help{.name = "serve",
                         .about =
                             "a prediction server (TensorFlow Serving's gRPC and REST APIs) for a "
                             "trained model_dir, with dynamic batching",
                         .example =
                             "serve --model_dir=MODEL_DIR --port=8500 --rest_api_port=8501 "
                             "--labels_file=LABELS"};
  if (std::optional<int> exit_code = start_tool(help, serve_flags(), argc, argv, &flags))
    return *exit_code;
  if (!flags.model_base_path.empty()) {
    if (!flags.model_dir.empty() && flags.model_dir != flags.model_base_path) {
      std::cerr << "serve: --model_base_path and --model_dir name the same directory: give one"
                << std::endl;
      return 2;
    }
    flags.model_dir = flags.model_base_path;
  }
  if (flags.model_dir.empty() && flags.model_config_file.empty()) {
    std::cerr << "serve: give --model_dir or --model_config_file (--help lists the flags)"
              << std::endl;
    return 2;
  }
  if (!flags.model_config_file.empty() && (!flags.model_dir.empty() || !flags.model_name.empty())) {
    std::cerr << "serve: --model_config_file names the models: give it, or --model_dir (and "
                 "--model_name), not both"
              << std::endl;
    return 2;
  }
  ServerOptions options;
  options.model_dir = flags.model_dir;
  options.model_name = flags.model_name;
  options.model_config_file = flags.model_config_file;
  options.model_config_poll = std::chrono::seconds(flags.model_config_file_poll_wait_seconds);
  options.host = flags.host;
  options.grpc_port = flags.port;
  // tensorflow_model_server's --rest_api_port=0 turns REST off; ServerOptions' 0 is any port.
  options.port = flags.rest_api_port == 0    ? -1
                 : flags.rest_api_port == -1 ? 0
                                             : flags.rest_api_port;
  options.grpc_max_message_bytes = flags.grpc_max_message_bytes;
  const std::optional<BackendOptions> backend =
      tool_backend_options("serve", flags.device, flags.num_threads);
  if (!backend) return 2;
  options.backend = *backend;
  options.http_threads = flags.http_threads;
  options.max_batch_size = flags.max_batch_size;
  options.batch_timeout = std::chrono::microseconds(flags.batch_timeout_micros);
  options.batch_wait_when_idle = flags.batch_wait_when_idle;
  options.max_queue = flags.max_queue;
  options.max_body_bytes = static_cast<size_t>(flags.max_body_bytes);
  options.max_image_pixels = flags.max_image_pixels;
  options.request_timeout = std::chrono::milliseconds(flags.request_timeout_ms);
  options.header_timeout = std::chrono::milliseconds(flags.header_timeout_ms);
  options.max_connections = static_cast<size_t>(flags.max_connections);
  options.max_connections_per_client = static_cast<size_t>(flags.max_connections_per_client);
  options.max_inflight_bytes = static_cast<size_t>(flags.max_inflight_bytes);
  options.poll_interval = flags.poll_interval_ms >= 0
                              ? std::chrono::milliseconds(flags.poll_interval_ms)
                              : std::chrono::seconds(flags.file_system_poll_wait_seconds);
  options.precision = flags.precision;
  if (!flags.labels_file.empty()) {
    Result<std::map<int64_t, std::string>> names = read_label_names(flags.labels_file);
    if (!names.ok()) {
      std::cerr << "serve: " << names.status().message() << std::endl;
      return exit_code_for(names.status());
    }
    options.label_names = std::move(*names);
  }
  options.log = [](const std::string& line) { std::cerr << "serve: " << line << std::endl; };

  install_stop_signal_handlers("serve", /*timeout_secs=*/60);
  // A closed terminal or a supervisor's SIGHUP must not end a server without its drain.
  signal(SIGHUP, SIG_IGN);
  Result<std::unique_ptr<Server>> server = Server::create(options);
  if (!server.ok()) {
    std::cerr << "serve: " << server.status().message() << std::endl;
    return exit_code_for(server.status());
  }
  // The precision the loaded model resolved to; before any model, what was asked for.
  const std::shared_ptr<ServedModel> loaded = (*server)->current_model();
  const std::string precision = loaded
                                    ? precision_name(loaded->precision())
                                    : std::string(choice_name(flags.precision)) + " (no model yet)";
  std::cerr << "serve: gRPC listening on " << flags.host << ":" << (*server)->grpc_port()
            << " (--port; TensorFlow Serving's gRPC API)" << std::endl;
  // REST's line keeps its format (scripts read the port from it).
  if ((*server)->port() >= 0) {
    std::cerr << "serve: listening on http://" << flags.host << ":" << (*server)->port();
  } else {
    std::cerr << "serve: REST is off (--rest_api_port=0)";
  }
  std::cerr << (flags.model_config_file.empty() ? " (model_dir " + flags.model_dir
                                                : " (model_config_file " + flags.model_config_file)
            << ", precision " << precision << ", batches up to " << flags.max_batch_size
            << ", batch timeout " << flags.batch_timeout_micros << " us)" << std::endl;
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
