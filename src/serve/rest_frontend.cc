#include "serve/rest_frontend.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "serve/api.h"
#include "serve/http_status.h"
#include "serve/server.h"
#include "serve/serving_core.h"
#include "serve/web_page.h"

namespace ic {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

http::Response json_answer(int status, std::string body) {
  http::Response response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

// Every error answer: the status's code decides the HTTP status.
http::Response error_answer(const Status& status) {
  return json_answer(http_status_for(status.code()), error_body(status.message()));
}

json tensor_info(const char* name, const char* dtype, std::vector<int64_t> dims) {
  json dim = json::array();
  for (int64_t d : dims) dim.push_back({{"size", std::to_string(d)}, {"name", ""}});
  return {{"dtype", dtype},
          {"tensor_shape", {{"dim", dim}, {"unknown_rank", false}}},
          {"name", std::string(name) + ":0"}};
}

// /v1/models/NAME[/versions/N | /labels/LABEL][/metadata | :predict | :classify | :regress]
const std::regex kModelPath(
    R"(/v1/models/([^/:]+)(?:/versions/(-?\d+)|/labels/([^/:]+))?(/metadata|:([a-z]+))?)");

// The request a matched path names; a version number too large for int64 names no version
// that can be served, and gets that version's not_found.
Result<ModelRequest> model_request(const std::smatch& match) {
  ModelRequest request;
  request.name = match[1].str();
  if (match[2].matched) {
    const std::string text = match[2].str();
    int64_t version = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), version);
    if (error != std::errc() || end != text.data() + text.size()) {
      return not_found("version ", text, " of '", request.name, "' is not served");
    }
    request.version = version;
  }
  if (match[3].matched) request.label = match[3].str();
  return request;
}

class Routes {
 public:
  Routes(ServingCore& core, const ServerOptions& options) : core_(core), options_(options) {}

  http::Response handle(http::Request& request) {
    const Clock::time_point arrived = Clock::now();
    std::string endpoint = "other", model;
    http::Response response = route(request, arrived, &endpoint, &model);
    core_.metrics().record_request(endpoint, response.status,
                                   std::chrono::duration<double>(Clock::now() - arrived).count());
    if (!model.empty()) core_.metrics().record_model_request(model, response.status);
    return response;
  }

 private:
  // *model: the served model a predict or classify ran on (empty: none).
  http::Response route(http::Request& request, Clock::time_point arrived, std::string* endpoint,
                       std::string* model_name) {
    const std::string path(request.path());
    const bool get = request.method == "GET" || request.method == "HEAD";
    std::smatch match;
    if (std::regex_match(path, match, kModelPath)) {
      const std::string action = match[5].matched ? match[5].str() : "";
      if (!action.empty() && action != "predict" && action != "classify" && action != "regress") {
        return no_such_path(request);
      }
      *endpoint = match[4].matched ? (action.empty() ? "metadata" : action) : "status";
      if (!action.empty() && request.method != "POST") return not_allowed(request, "POST");
      if (action.empty() && !get) return not_allowed(request, "GET");
      Result<ModelRequest> named = model_request(match);
      if (!named.ok()) return error_answer(named.status());
      if (*endpoint == "status" && !named->label) return status(*named);
      Result<std::shared_ptr<ServedModel>> model = core_.resolve(*named);
      if (!model.ok()) return error_answer(model.status());
      if (*endpoint == "status") return status({named->name, (*model)->version(), std::nullopt});
      if (*endpoint == "metadata") return metadata(named->name, **model);
      if (*endpoint == "regress") {
        return error_answer(invalid_argument(
            "this model is a classifier: use :predict or :classify, not :regress"));
      }
      *model_name = named->name;
      return predict(request, *model, *endpoint == "classify", arrived);
    }
    struct Page {
      const char* path;
      const char* endpoint;
      http::Response (Routes::*answer)();
    };
    static constexpr Page kPages[] = {{"/healthz", "healthz", &Routes::healthz},
                                      {"/metrics", "metrics", &Routes::metrics},
                                      {"/", "page", &Routes::page}};
    for (const Page& page : kPages) {
      if (path != page.path) continue;
      *endpoint = page.endpoint;
      return get ? (this->*page.answer)() : not_allowed(request, "GET");
    }
    return no_such_path(request);
  }

  static http::Response no_such_path(const http::Request& request) {
    return json_answer(
        404, error_body("no such path: " + request.method + " " + std::string(request.path())));
  }

  static http::Response not_allowed(const http::Request& request, const char* allowed) {
    http::Response response = json_answer(
        405, error_body(request.method + " " + std::string(request.path()) + ": use " + allowed));
    response.headers.emplace_back("Allow", allowed);
    return response;
  }

  // TF Serving's GetModelStatusResponse as JSON: the version as a string, the state's name.
  http::Response status(const ModelRequest& request) {
    Result<std::vector<VersionStatus>> versions = core_.status(request.name, request.version);
    if (!versions.ok()) return error_answer(versions.status());
    json list = json::array();
    for (const VersionStatus& v : *versions) {
      list.push_back({{"version", std::to_string(v.version)},
                      {"state", version_state_name(v.state)},
                      {"status",
                       {{"error_code", status_code_name(v.status.code())},
                        {"error_message", v.status.ok() ? "" : v.status.message()}}}});
    }
    return json_answer(200, json{{"model_version_status", list}}.dump());
  }

  http::Response metadata(const std::string& name, const ServedModel& model) {
    const CheckpointMeta& m = model.meta();
    const json signature = {
        {"inputs", {{"images", tensor_info("images", "DT_FLOAT", {-1, m.height, m.width, 3})}}},
        {"outputs",
         {{"classes", tensor_info("classes", "DT_INT64", {-1})},
          {"probabilities", tensor_info("probabilities", "DT_FLOAT", {-1, m.num_classes})}}},
        {"method_name", "tensorflow/serving/predict"}};
    const json body = {
        {"model_spec",
         {{"name", name}, {"signature_name", ""}, {"version", std::to_string(model.version())}}},
        {"metadata", {{"signature_def", {{"signature_def", {{"serving_default", signature}}}}}}}};
    return json_answer(200, body.dump());
  }

  http::Response predict(const http::Request& http_request,
                         const std::shared_ptr<ServedModel>& model, bool classify,
                         Clock::time_point arrived) {
    Batcher::Arrival arrival = core_.arriving();
    PredictRequest request;
    Status status = parse_predict_body(http_request.body, classify, &request);
    if (!status.ok()) return error_answer(status);
    const Clock::time_point parsed = Clock::now();
    const int64_t count = static_cast<int64_t>(request.instances.size());
    // Admission before any image buffer exists: a request the queue cannot take is refused
    // while it costs only its parsed body.
    status = core_.admit(count);
    if (!status.ok()) return error_answer(status);
    auto job = std::make_shared<BatchJob>(model, count);
    const InstanceOptions instance_options = core_.instance_options(*model);
    for (int64_t i = 0; i < count; ++i) {
      status = fill_instance(*request.instances[i], static_cast<size_t>(i), instance_options,
                             job->image(i));
      if (!status.ok()) return error_answer(status);
    }
    const Clock::time_point preprocessed = Clock::now();
    status = core_.run(job, arrival, arrived);
    if (!status.ok()) return error_answer(status);
    const Clock::time_point ran = Clock::now();
    const float* logits = job->logits(0);
    const json body = classify
                          ? classify_response(logits, count, model->num_classes(), request.top_k,
                                              options_.label_names)
                          : predict_response(logits, count, model->num_classes(), request.columnar);
    http::Response answer = json_answer(200, body.dump());
    const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    ServerMetrics::Stages stages;
    stages.receive = seconds(arrived - http_request.first_byte);
    stages.parse = seconds(parsed - arrived);
    stages.preprocess = seconds(preprocessed - parsed);
    stages.model = seconds(job->model_time());
    stages.queue = std::max(0.0, seconds(ran - preprocessed) - stages.model);
    stages.respond = seconds(Clock::now() - ran);
    core_.metrics().record_stages(stages);
    return answer;
  }

  http::Response healthz() {
    std::shared_ptr<ServedModel> model = core_.current();
    if (!model) return error_answer(unavailable("no model loaded yet"));
    return json_answer(200, json{{"status", "serving"},
                                 {"model", core_.name()},
                                 {"version", model->version()},
                                 {"precision", precision_name(model->precision())}}
                                .dump());
  }

  http::Response metrics() {
    http::Response response;
    response.content_type = "text/plain; version=0.0.4";
    response.body = core_.metrics().prometheus_text() +
                    "# HELP serve_queued_instances Instances waiting for the model now.\n"
                    "# TYPE serve_queued_instances gauge\n"
                    "serve_queued_instances " +
                    std::to_string(core_.queued()) + "\n" +
                    "# HELP serve_inflight_request_bytes Request bytes held now, REST bodies and "
                    "gRPC messages together (--max_inflight_bytes).\n"
                    "# TYPE serve_inflight_request_bytes gauge\n"
                    "serve_inflight_request_bytes " +
                    std::to_string(core_.inflight_budget()->used()) + "\n";
    return response;
  }

  http::Response page() {
    http::Response response;
    response.content_type = "text/html; charset=utf-8";
    response.body = web_page_html();
    return response;
  }

  ServingCore& core_;
  const ServerOptions& options_;
};

}  // namespace

http::ServerOptions http_options_for(const ServerOptions& options) {
  http::ServerOptions h;
  h.host = options.host;
  h.port = options.port;
  h.parser.max_body_bytes = options.max_body_bytes;
  h.worker_threads = options.http_threads;
  h.header_timeout = options.header_timeout;
  h.body_timeout = options.request_timeout;
  h.write_timeout = options.request_timeout;
  h.idle_timeout = std::chrono::seconds(2);
  h.max_connections = options.max_connections;
  h.max_connections_per_address = options.max_connections_per_client;
  h.max_inflight_body_bytes = options.max_inflight_bytes;
  return h;
}

Result<std::unique_ptr<RestFrontend>> RestFrontend::create(ServingCore& core,
                                                           const ServerOptions& options) {
  auto routes = std::make_shared<Routes>(core, core.options());
  http::ServerOptions http_options = http_options_for(options);
  http_options.inflight_budget = core.inflight_budget();
  IC_ASSIGN_OR_RETURN(std::unique_ptr<http::Server> server,
                      http::Server::create(http_options, [routes](http::Request& request) {
                        return routes->handle(request);
                      }));
  return std::make_unique<RestFrontend>(std::move(server));
}

}  // namespace ic
