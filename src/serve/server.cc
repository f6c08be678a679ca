#include "serve/server.h"

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "io/checkpoint_dir.h"
#include "io/file_system.h"
#include "runtime/inference_model.h"
#include "serve/api.h"
#include "serve/batcher.h"
#include "serve/http_status.h"
#include "serve/metrics.h"
#include "serve/web_page.h"

namespace ic {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Server::State {
  ServerOptions options;
  httplib::Server http;
  int port = 0;
  std::unique_ptr<ServerMetrics> metrics;
  std::unique_ptr<Batcher> batcher;

  mutable std::mutex model_mutex;
  std::shared_ptr<ServedModel> model;  // guarded by model_mutex
  std::string model_name;              // guarded by model_mutex; fixed by the first load

  std::mutex watch_mutex;
  std::condition_variable watch_wake;
  bool stopping = false;  // guarded by watch_mutex
  std::string failed_checkpoint;
  std::thread watcher;

  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }
  std::shared_ptr<ServedModel> current() const {
    std::lock_guard lock(model_mutex);
    return model;
  }
  std::string name() const {
    std::lock_guard lock(model_mutex);
    return model_name;
  }
  // Loads `checkpoint` (empty: the newest) and makes it the model new requests run on.
  bool load(const std::string& checkpoint);
  void watch();
  void add_routes();
  // :predict / :classify on `model` (null: an error has been answered already).
  void predict(const httplib::Request& req, httplib::Response& res, const std::string& body,
               std::shared_ptr<ServedModel> model);
};

bool Server::State::load(const std::string& checkpoint) {
  const auto start = Clock::now();
  Result<std::unique_ptr<ServedModel>> loaded = ServedModel::load(
      options.backend, options.model_dir, checkpoint, options.max_batch_size, options.precision);
  if (!loaded.ok()) {
    failed_checkpoint = checkpoint;
    metrics->record_load(false, 0);
    const std::shared_ptr<ServedModel> old = current();
    log("could not load a checkpoint: " + loaded.status().message() +
        (old ? "; still serving version " + std::to_string(old->version()) : ""));
    return false;
  }
  std::shared_ptr<ServedModel> fresh = std::move(*loaded);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::shared_ptr<ServedModel> old;
  {
    std::lock_guard lock(model_mutex);
    if (model_name.empty()) {
      model_name = options.model_name.empty() ? fresh->meta().model : options.model_name;
    }
    old = std::exchange(model, fresh);
  }
  metrics->record_load(true, fresh->version());
  metrics->record_precision(model_name, precision_name(fresh->precision()));
  std::ostringstream line;
  line.precision(3);
  line << (old ? "reloaded: now serving version " : "loaded version ") << fresh->version()
       << (old ? " (was " + std::to_string(old->version()) + ")" : std::string()) << " of "
       << model_name << " from " << fresh->checkpoint() << " (" << describe(fresh->meta())
       << "), precision " << precision_name(fresh->precision()) << " (" << fresh->precision_reason()
       << "), in " << seconds << " s";
  log(line.str());
  // Requests already queued on the old model finish on it; it is freed with their last one.
  return true;
}

void Server::State::watch() {
  for (;;) {
    {
      std::unique_lock lock(watch_mutex);
      if (watch_wake.wait_for(lock, options.poll_interval, [&] { return stopping; })) return;
    }
    Result<std::optional<std::string>> latest = newest_servable(options.model_dir);
    if (!latest.ok() || !latest->has_value()) continue;  // a checkpoint being written, or none
    const std::string& path = **latest;
    const std::shared_ptr<ServedModel> served = current();
    if ((served && served->checkpoint() == path) || path == failed_checkpoint) continue;
    load(path);
  }
}

namespace {

thread_local Clock::time_point request_start;
thread_local bool request_routed = false;

// Every error answer: the status's code decides the HTTP status (serve/http_status.h).
void answer_error(httplib::Response& res, const Status& status) {
  res.status = http_status_for(status.code());
  res.set_content(error_body(status.message()), "application/json");
}

std::string endpoint_of(const std::string& path) {
  if (path.rfind("/v1/models/", 0) == 0) {
    if (path.find(":predict") != std::string::npos) return "predict";
    if (path.find(":classify") != std::string::npos) return "classify";
    if (path.size() > 9 && path.compare(path.size() - 9, 9, "/metadata") == 0) return "metadata";
    return "status";
  }
  if (path == "/healthz") return "healthz";
  if (path == "/metrics") return "metrics";
  if (path == "/") return "page";
  return "other";
}

json tensor_info(const char* name, const char* dtype, std::vector<int64_t> dims) {
  json dim = json::array();
  for (int64_t d : dims) dim.push_back({{"size", std::to_string(d)}, {"name", ""}});
  return {{"dtype", dtype},
          {"tensor_shape", {{"dim", dim}, {"unknown_rank", false}}},
          {"name", std::string(name) + ":0"}};
}

}  // namespace

void Server::State::predict(const httplib::Request& req, httplib::Response& res,
                            const std::string& text, std::shared_ptr<ServedModel> model) {
  const Clock::time_point arrived = request_start;
  if (!model) return;
  const std::string method = req.matches[3];
  if (method == "regress") {
    return answer_error(
        res,
        invalid_argument("this model is a classifier: use :predict or :classify, not :regress"));
  }
  const bool classify = method == "classify";
  PredictRequest request;
  Status status = parse_predict_body(text, classify, &request);
  if (!status.ok()) return answer_error(res, status);
  const int64_t count = static_cast<int64_t>(request.instances.size());
  auto job = std::make_shared<BatchJob>(model, count);
  const InstanceOptions instance_options{model->meta().height, model->meta().width,
                                         options.max_image_pixels};
  for (int64_t i = 0; i < count; ++i) {
    status = fill_instance(*request.instances[i], static_cast<size_t>(i), instance_options,
                           job->image(i));
    if (!status.ok()) return answer_error(res, status);
  }
  const Status queued = batcher->submit(job);
  if (!queued.ok()) return answer_error(res, queued);
  if (!job->wait_until(arrived + options.request_timeout)) {
    return answer_error(res, unavailable("timed out after ", options.request_timeout.count(),
                                         " ms (--request_timeout_ms) waiting for the model"));
  }
  const float* logits = job->logits(0);
  const json body = classify
                        ? classify_response(logits, count, model->num_classes(), request.top_k,
                                            options.label_names)
                        : predict_response(logits, count, model->num_classes(), request.columnar);
  res.set_content(body.dump(), "application/json");
}

void Server::State::add_routes() {
  // Every answer is timed from routing (after the body has been read) and counted.
  http.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_start = Clock::now();
    request_routed = true;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const double seconds =
        request_routed ? std::chrono::duration<double>(Clock::now() - request_start).count() : 0;
    request_routed = false;
    metrics->record_request(endpoint_of(req.path), res.status, seconds);
  });
  // httplib's own errors (no route: 404; body over the limit: 413; ...) get a JSON body too.
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string message = "HTTP " + std::to_string(res.status);
        if (res.status == 404) message = "no such path: " + req.method + " " + req.path;
        if (res.status == 413) message = "the request body is larger than the server's limit";
        // httplib chose the status; only the body is ours.
        res.set_content(error_body(message), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));

  // The model named in the path, or an error answered already.
  auto resolve = [this](const httplib::Request& req,
                        httplib::Response& res) -> std::shared_ptr<ServedModel> {
    std::shared_ptr<ServedModel> model = current();
    const std::string name = req.matches[1];
    if (!model) {
      answer_error(res, unavailable("no model is loaded yet (waiting for a checkpoint in ",
                                    options.model_dir, ")"));
      return nullptr;
    }
    if (name != this->name()) {
      answer_error(
          res, not_found("unknown model '", name, "' (this server serves '", this->name(), "')"));
      return nullptr;
    }
    if (req.matches[2].matched && req.matches[2].str() != std::to_string(model->version())) {
      answer_error(res,
                   not_found("version ", req.matches[2].str(), " of '", name,
                             "' is not served (the served version is ", model->version(), ")"));
      return nullptr;
    }
    return model;
  };

  const std::string model_path = R"(/v1/models/([^/:]+)(?:/versions/(-?\d+))?)";
  http.Get(model_path, [this, resolve](const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<ServedModel> model = resolve(req, res);
    if (!model) return;
    const json status = {
        {"model_version_status",
         json::array({{{"version", std::to_string(model->version())},
                       {"state", "AVAILABLE"},
                       {"status", {{"error_code", "OK"}, {"error_message", ""}}}}})}};
    res.set_content(status.dump(), "application/json");
  });
  http.Get(model_path + "/metadata", [this, resolve](const httplib::Request& req,
                                                     httplib::Response& res) {
    std::shared_ptr<ServedModel> model = resolve(req, res);
    if (!model) return;
    const CheckpointMeta& m = model->meta();
    const json signature = {
        {"inputs", {{"images", tensor_info("images", "DT_FLOAT", {-1, m.height, m.width, 3})}}},
        {"outputs",
         {{"classes", tensor_info("classes", "DT_INT64", {-1})},
          {"probabilities", tensor_info("probabilities", "DT_FLOAT", {-1, m.num_classes})}}},
        {"method_name", "tensorflow/serving/predict"}};
    const json body = {
        {"model_spec",
         {{"name", name()}, {"signature_name", ""}, {"version", std::to_string(model->version())}}},
        {"metadata", {{"signature_def", {{"signature_def", {{"serving_default", signature}}}}}}}};
    res.set_content(body.dump(), "application/json");
  });
  // Read through a content reader: httplib's plain handlers refuse (413) any body above 8 KiB
  // sent as application/x-www-form-urlencoded, which is what `curl -d` sends and TF Serving's
  // own examples use. The --max_body_bytes limit still applies (set_payload_max_length).
  http.Post(model_path + ":(predict|classify|regress)",
            httplib::Server::HandlerWithContentReader(
                [this, resolve](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& read_content) {
                  std::string body;
                  bool too_large = false;
                  const bool read = read_content([&](const char* data, size_t size) {
                    too_large = body.size() + size > options.max_body_bytes;
                    if (!too_large) body.append(data, size);
                    return !too_large;
                  });
                  // httplib refuses a Content-Length over the limit itself (status 413).
                  too_large = too_large || res.status == 413;
                  if (!read && !too_large) {
                    res.set_header("Connection", "close");
                    return answer_error(res, invalid_argument("could not read the request body"));
                  }
                  if (too_large) {
                    // The rest of the body is never read: the connection cannot be reused.
                    res.set_header("Connection", "close");
                    return answer_error(
                        res,
                        resource_exhausted("the request body is larger than the server's "
                                           "limit of ",
                                           options.max_body_bytes, " bytes (--max_body_bytes)"));
                  }
                  predict(req, res, body, resolve(req, res));
                }));
  http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<ServedModel> model = current();
    if (!model) return answer_error(res, unavailable("no model loaded yet"));
    res.set_content(json{{"status", "serving"},
                         {"model", name()},
                         {"version", model->version()},
                         {"precision", precision_name(model->precision())}}
                        .dump(),
                    "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const std::string queued =
        "# HELP serve_queued_instances Instances waiting for the model now.\n"
        "# TYPE serve_queued_instances gauge\n"
        "serve_queued_instances " +
        std::to_string(batcher->queued()) + "\n";
    res.set_content(metrics->prometheus_text() + queued, "text/plain; version=0.0.4");
  });
  http.Get("/", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(web_page_html(), "text/html; charset=utf-8");
  });
}

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& options) {
  if (options.model_dir.empty()) return invalid_argument("give --model_dir");
  // Through the seam: a gs:// model_dir works, an unknown scheme is an error. An object store
  // has no empty directories, so there a prefix with nothing in it yet is fine (503 until a
  // checkpoint or an export appears); locally the directory must exist.
  IC_ASSIGN_OR_RETURN(FileSystem * model_fs, file_system_for(options.model_dir));
  if (!model_fs->writes_appear_whole()) {
    IC_ASSIGN_OR_RETURN(bool is_dir, model_fs->is_directory(options.model_dir));
    if (!is_dir) return not_found("--model_dir ", options.model_dir, " is not a directory");
  }
  auto state = std::make_unique<State>();
  State& s = *state;
  s.options = options;
  s.metrics = std::make_unique<ServerMetrics>(options.max_batch_size);
  ServerMetrics* metrics = s.metrics.get();
  s.batcher = std::make_unique<Batcher>(
      BatcherOptions{options.max_batch_size, options.batch_timeout, options.max_queue},
      [metrics](int64_t size, std::chrono::nanoseconds took) {
        metrics->record_batch(size, std::chrono::duration<double>(took).count());
      });

  const int threads = options.http_threads;
  // httplib takes ownership of the queue it is handed (its API is a raw pointer).
  s.http.new_task_queue = [threads] {
    return std::make_unique<httplib::ThreadPool>(static_cast<size_t>(threads)).release();
  };
  s.http.set_payload_max_length(options.max_body_bytes);
  const auto timeout_s = std::max<int64_t>(1, options.request_timeout.count() / 1000);
  s.http.set_read_timeout(timeout_s, 0);
  s.http.set_write_timeout(timeout_s, 0);
  // cpp-httplib writes an answer's headers and its body in two sends; with Nagle's algorithm on,
  // the body then waits for the client's delayed ACK of the headers (40 ms on Linux) on every
  // kept-alive connection.
  s.http.set_tcp_nodelay(true);
  // Load balancers and benchmarks keep connections open; an idle one is closed after 2 s so
  // that shutdown is not held up by it.
  s.http.set_keep_alive_max_count(100000);
  s.http.set_keep_alive_timeout(2);
  s.add_routes();

  if (options.port == 0) {
    s.port = s.http.bind_to_any_port(options.host);
    if (s.port < 0) return error("cannot listen on ", options.host, " (any port)");
  } else {
    if (!s.http.bind_to_port(options.host, options.port)) {
      return error("cannot listen on ", options.host, ":", options.port,
                   " (in use, or not an address of this machine)");
    }
    s.port = options.port;
  }

  Result<std::optional<std::string>> latest = newest_servable(options.model_dir);
  if (!latest.ok()) {
    s.log("no usable checkpoint yet: " + latest.status().message());
  } else if (!latest->has_value()) {
    s.log("no checkpoint or export yet in " + options.model_dir +
          "; answering 503 until one appears");
  } else {
    s.load(**latest);
  }
  if (options.poll_interval.count() > 0) s.watcher = std::thread([&s] { s.watch(); });
  return std::make_unique<Server>(std::move(state));
}

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  shutdown();
  {
    std::lock_guard lock(state_->watch_mutex);
    state_->stopping = true;
  }
  state_->watch_wake.notify_all();
  if (state_->watcher.joinable()) state_->watcher.join();
  state_->batcher->stop();
}

int Server::port() const { return state_->port; }

void Server::run() {
  state_->http.listen_after_bind();
  // Every connection's thread has finished: no request is waiting on the batcher any more.
}

void Server::shutdown() {
  state_->http.stop();
  state_->batcher->stop_waiting();
}

bool Server::is_running() const { return state_->http.is_running(); }

std::shared_ptr<ServedModel> Server::current_model() const { return state_->current(); }

}  // namespace ic
