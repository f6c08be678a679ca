#include "serve/server.h"

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "serve/api.h"
#include "serve/grpc_frontend.h"
#include "serve/http_status.h"
#include "serve/serving_core.h"
#include "serve/web_page.h"

namespace ic {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Server::State {
  ServerOptions options;
  std::unique_ptr<ServingCore> core;
  httplib::Server http;
  int port = -1;  // -1: REST is off
  std::unique_ptr<GrpcFrontend> grpc;
  std::once_flag grpc_stopped;
  // run() without REST waits here for shutdown().
  std::mutex run_mutex;
  std::condition_variable run_wake;
  bool running = false, stop_asked = false;  // guarded by run_mutex

  std::shared_ptr<ServedModel> current() const { return core->current(); }
  std::string name() const { return core->name(); }
  void add_routes();
  // :predict / :classify on `model` (null: an error has been answered already).
  void predict(const httplib::Request& req, httplib::Response& res, const std::string& body,
               std::shared_ptr<ServedModel> model);
};

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
  const InstanceOptions instance_options = core->instance_options(*model);
  for (int64_t i = 0; i < count; ++i) {
    status = fill_instance(*request.instances[i], static_cast<size_t>(i), instance_options,
                           job->image(i));
    if (!status.ok()) return answer_error(res, status);
  }
  status = core->run(job, arrived);
  if (!status.ok()) return answer_error(res, status);
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
    core->metrics().record_request(endpoint_of(req.path), res.status, seconds);
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
    std::optional<std::string> version;
    if (req.matches[2].matched) version = req.matches[2].str();
    Result<std::shared_ptr<ServedModel>> model = core->resolve(req.matches[1], version);
    if (!model.ok()) {
      answer_error(res, model.status());
      return nullptr;
    }
    return *model;
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
        std::to_string(core->queued()) + "\n";
    res.set_content(core->metrics().prometheus_text() + queued, "text/plain; version=0.0.4");
  });
  http.Get("/", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(web_page_html(), "text/html; charset=utf-8");
  });
}

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& options) {
  if (options.port < 0 && options.grpc_port < 0) {
    return invalid_argument("both front ends are off: give a gRPC port or a REST port");
  }
  IC_ASSIGN_OR_RETURN(std::unique_ptr<ServingCore> core, ServingCore::create(options));
  auto state = std::make_unique<State>();
  State& s = *state;
  s.options = options;
  s.core = std::move(core);

  if (options.port >= 0) {
    const int threads = options.http_threads;
    // httplib takes ownership of the queue it is handed (its API is a raw pointer).
    s.http.new_task_queue = [threads] {
      return std::make_unique<httplib::ThreadPool>(static_cast<size_t>(threads)).release();
    };
    s.http.set_payload_max_length(options.max_body_bytes);
    const auto timeout_s = std::max<int64_t>(1, options.request_timeout.count() / 1000);
    s.http.set_read_timeout(timeout_s, 0);
    s.http.set_write_timeout(timeout_s, 0);
    // cpp-httplib writes an answer's headers and its body in two sends; with Nagle's algorithm
    // on, the body then waits for the client's delayed ACK of the headers (40 ms on Linux) on
    // every kept-alive connection.
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
  }
  if (options.grpc_port >= 0) {
    IC_ASSIGN_OR_RETURN(s.grpc, GrpcFrontend::start(*s.core, options.host, options.grpc_port,
                                                    options.grpc_max_message_bytes));
  }
  return std::make_unique<Server>(std::move(state));
}

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  shutdown();
  // The front ends have drained; the core then stops its watcher and its batcher.
  state_->grpc.reset();
  state_->core.reset();
}

int Server::port() const { return state_->port; }

int Server::grpc_port() const { return state_->grpc ? state_->grpc->port() : -1; }

void Server::run() {
  State& s = *state_;
  {
    std::lock_guard lock(s.run_mutex);
    s.running = !s.stop_asked;
  }
  if (s.port >= 0) {
    s.http.listen_after_bind();
  } else {
    std::unique_lock lock(s.run_mutex);
    s.run_wake.wait(lock, [&] { return s.stop_asked; });
  }
  // Every REST connection's thread has finished; gRPC calls in flight are answered too.
  if (s.grpc) std::call_once(s.grpc_stopped, [&] { s.grpc->shutdown(); });
  std::lock_guard lock(s.run_mutex);
  s.running = false;
}

void Server::shutdown() {
  State& s = *state_;
  s.core->stop_waiting();
  if (s.port >= 0) s.http.stop();
  {
    std::lock_guard lock(s.run_mutex);
    s.stop_asked = true;
  }
  s.run_wake.notify_all();
  if (s.grpc) std::call_once(s.grpc_stopped, [&] { s.grpc->shutdown(); });
}

bool Server::is_running() const {
  State& s = *state_;
  if (s.port >= 0) return s.http.is_running();
  std::lock_guard lock(s.run_mutex);
  return s.running;
}

std::shared_ptr<ServedModel> Server::current_model() const { return state_->current(); }

}  // namespace ic
