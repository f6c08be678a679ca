#include "serve/grpc_frontend.h"

#include <grpcpp/grpcpp.h>

#include <mutex>

#include "infer/top_classes.h"
#include "proto/tensorflow_serving/model_service.grpc.pb.h"
#include "proto/tensorflow_serving/prediction_service.grpc.pb.h"
#include "serve/grpc_model_info.h"
#include "serve/grpc_tensors.h"
#include "serve/http_status.h"
#include "serve/model_manager.h"

namespace ic {
namespace {

namespace tfs = tensorflow::serving;
using Clock = ServingCore::Clock;

grpc::Status to_grpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(grpc_code_for(status.code())),
                      status.message());
}

// What a ModelSpec names: a model, and a version number or a version label.
Result<ModelRequest> model_request(const tfs::ModelSpec& spec) {
  if (spec.name().empty()) return invalid_argument("model_spec.name is empty: name the model");
  ModelRequest request;
  request.name = spec.name();
  if (spec.has_version()) request.version = spec.version().value();
  if (spec.version_choice_case() == tfs::ModelSpec::kVersionLabel) {
    request.label = spec.version_label();
  }
  return request;
}

// The model version a ModelSpec names.
Result<std::shared_ptr<ServedModel>> resolve(const ServingCore& core, const tfs::ModelSpec& spec) {
  IC_ASSIGN_OR_RETURN(ModelRequest request, model_request(spec));
  return core.resolve(request);
}

// The answer names the model as asked, and the version that answered.
void answer_spec(const tfs::ModelSpec& asked, const ServedModel& model,
                 const std::string& signature, tfs::ModelSpec* spec) {
  spec->set_name(asked.name());
  spec->mutable_version()->set_value(model.version());
  spec->set_signature_name(signature);
}

// When the client's deadline is earlier than the server's request timeout, it bounds the wait.
std::optional<Clock::time_point> client_deadline(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  const auto now = std::chrono::system_clock::now();
  if (deadline - now > std::chrono::hours(24)) return std::nullopt;  // none given
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(deadline - now);
}

// Preprocessed instances in a job, run on the model; DEADLINE_EXCEEDED once the client's
// deadline has passed, whatever else went wrong meanwhile.
class JobRunner {
 public:
  JobRunner(ServingCore& core, grpc::ServerContext& context)
      : core_(core), context_(context), arrived_(Clock::now()), arrival_(core.arriving()) {}

  grpc::Status run(const std::shared_ptr<BatchJob>& job) {
    const std::optional<Clock::time_point> deadline = client_deadline(context_);
    const Status status = core_.run(job, arrival_, arrived_, deadline);
    if (!status.ok() && deadline && Clock::now() >= *deadline) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          "the client's deadline passed before the model answered");
    }
    return to_grpc(status);
  }
  // Counts the call in /metrics, under the HTTP status REST would have answered.
  void record(const char* method, const grpc::Status& status) {
    const double seconds = std::chrono::duration<double>(Clock::now() - arrived_).count();
    const int code = status.ok() ? 200 : status.error_code() == grpc::DEADLINE_EXCEEDED ? 504 : 0;
    const int http_code = code ? code : http_status_for(status_code_of(status));
    core_.metrics().record_request(std::string("grpc_") + method, http_code, seconds);
    if (!model_.empty()) core_.metrics().record_model_request(model_, http_code);
  }
  // The served model the call resolved to (counted by model once answered).
  void set_model(const std::string& name) { model_ = name; }

 private:
  static StatusCode status_code_of(const grpc::Status& status) {
    for (StatusCode code :
         {StatusCode::invalid_argument, StatusCode::not_found, StatusCode::already_exists,
          StatusCode::resource_exhausted, StatusCode::unavailable, StatusCode::cancelled,
          StatusCode::data_loss}) {
      if (grpc_code_for(code) == status.error_code()) return code;
    }
    return StatusCode::internal;
  }
  ServingCore& core_;
  grpc::ServerContext& context_;
  Clock::time_point arrived_;
  Batcher::Arrival arrival_;  // from the call's start until its job is queued
  std::string model_;
};

// A call whose message does not fit in the request bytes REST and gRPC hold together
// (--max_inflight_bytes): UNAVAILABLE, as REST's 503, so clients retry later. gRPC has parsed
// the message already; answering now frees it instead of holding it through the queue.
grpc::Status too_many_bytes() {
  return to_grpc(
      unavailable("the server is holding too many request bytes at once "
                  "(--max_inflight_bytes, REST and gRPC together)"));
}

class PredictionService final : public tfs::PredictionService::Service {
 public:
  explicit PredictionService(ServingCore& core) : core_(core) {}

  grpc::Status Predict(grpc::ServerContext* context, const tfs::PredictRequest* request,
                       tfs::PredictResponse* response) override {
    JobRunner runner(core_, *context);
    const ByteBudget::Hold held(*core_.inflight_budget(), request->ByteSizeLong());
    const grpc::Status status =
        held.held() ? predict(runner, *request, response) : too_many_bytes();
    runner.record("predict", status);
    return status;
  }

  grpc::Status Classify(grpc::ServerContext* context, const tfs::ClassificationRequest* request,
                        tfs::ClassificationResponse* response) override {
    JobRunner runner(core_, *context);
    const ByteBudget::Hold held(*core_.inflight_budget(), request->ByteSizeLong());
    const grpc::Status status =
        held.held() ? classify(runner, *request, response) : too_many_bytes();
    runner.record("classify", status);
    return status;
  }

  grpc::Status GetModelMetadata(grpc::ServerContext*, const tfs::GetModelMetadataRequest* request,
                                tfs::GetModelMetadataResponse* response) override {
    Result<std::shared_ptr<ServedModel>> model = resolve(core_, request->model_spec());
    if (!model.ok()) return to_grpc(model.status());
    for (const std::string& field : request->metadata_field()) {
      if (field != "signature_def") {
        return to_grpc(invalid_argument("unknown metadata_field '", field,
                                        "' (the only one is 'signature_def')"));
      }
    }
    answer_spec(request->model_spec(), **model, "", response->mutable_model_spec());
    (*response->mutable_metadata())["signature_def"].PackFrom(signature_def_map((*model)->meta()));
    return grpc::Status::OK;
  }

 private:
  grpc::Status predict(JobRunner& runner, const tfs::PredictRequest& request,
                       tfs::PredictResponse* response) {
    Result<std::shared_ptr<ServedModel>> model = resolve(core_, request.model_spec());
    if (!model.ok()) return to_grpc(model.status());
    runner.set_model(request.model_spec().name());
    Result<PredictSignature> signature = predict_signature(request.model_spec().signature_name());
    if (!signature.ok()) return to_grpc(signature.status());
    Result<std::vector<std::string>> outputs = requested_outputs(request);
    if (!outputs.ok()) return to_grpc(outputs.status());
    const InstanceOptions options = core_.instance_options(**model);
    Result<TensorImages> images = request_images(request, *signature, options);
    if (!images.ok()) return to_grpc(images.status());
    auto job = std::make_shared<BatchJob>(*model, images->count);
    for (int64_t i = 0; i < images->count; ++i) {
      const Status filled = fill_tensor_image(*images, i, options, job->image(i));
      if (!filled.ok()) return to_grpc(filled);
    }
    const grpc::Status ran = runner.run(job);
    if (!ran.ok()) return ran;
    write_predict_outputs(job->logits(0), images->count, (*model)->num_classes(), *outputs,
                          response);
    answer_spec(request.model_spec(), **model,
                *signature == PredictSignature::classify ? "classify" : "serving_default",
                response->mutable_model_spec());
    return grpc::Status::OK;
  }

  grpc::Status classify(JobRunner& runner, const tfs::ClassificationRequest& request,
                        tfs::ClassificationResponse* response) {
    Result<std::shared_ptr<ServedModel>> model = resolve(core_, request.model_spec());
    if (!model.ok()) return to_grpc(model.status());
    runner.set_model(request.model_spec().name());
    Result<PredictSignature> signature = predict_signature(request.model_spec().signature_name());
    if (!signature.ok()) return to_grpc(signature.status());
    Result<std::vector<std::string_view>> images = example_images(request.input());
    if (!images.ok()) return to_grpc(images.status());
    const int64_t count = static_cast<int64_t>(images->size());
    const InstanceOptions options = core_.instance_options(**model);
    auto job = std::make_shared<BatchJob>(*model, count);
    for (int64_t i = 0; i < count; ++i) {
      const Status filled =
          fill_encoded_image((*images)[i], static_cast<size_t>(i), options, job->image(i));
      if (!filled.ok()) return to_grpc(filled);
    }
    const grpc::Status ran = runner.run(job);
    if (!ran.ok()) return ran;
    const int64_t classes = (*model)->num_classes();
    const std::map<int64_t, std::string>& names = core_.options().label_names;
    for (int64_t i = 0; i < count; ++i) {
      tfs::Classifications& out = *response->mutable_result()->add_classifications();
      for (const auto& [label, probability] : top_classes(job->logits(i), classes, kClassifyTopK)) {
        tfs::Class& entry = *out.add_classes();
        auto name = names.find(label);
        entry.set_label(name != names.end() ? name->second : std::to_string(label));
        entry.set_score(probability);
      }
    }
    answer_spec(request.model_spec(), **model, "classify", response->mutable_model_spec());
    return grpc::Status::OK;
  }

  ServingCore& core_;
};

class ModelService final : public tfs::ModelService::Service {
 public:
  explicit ModelService(ServingCore& core) : core_(core) {}

  grpc::Status GetModelStatus(grpc::ServerContext*, const tfs::GetModelStatusRequest* request,
                              tfs::GetModelStatusResponse* response) override {
    Result<ModelRequest> named = model_request(request->model_spec());
    if (!named.ok()) return to_grpc(named.status());
    std::optional<int64_t> version = named->version;
    if (named->label) {
      Result<std::shared_ptr<ServedModel>> model = core_.resolve(*named);
      if (!model.ok()) return to_grpc(model.status());
      version = (*model)->version();
    }
    Result<std::vector<VersionStatus>> versions = core_.status(named->name, version);
    if (!versions.ok()) return to_grpc(versions.status());
    for (const VersionStatus& v : *versions) {
      tfs::ModelVersionStatus& status = *response->add_model_version_status();
      status.set_version(v.version);
      // TF Serving's enum values: START 10, LOADING 20, ... END 50, in VersionState's order.
      status.set_state(
          static_cast<tfs::ModelVersionStatus::State>(10 * (static_cast<int>(v.state) + 1)));
      status.mutable_status()->set_error_code(
          static_cast<tensorflow::error::Code>(grpc_code_for(v.status.code())));
      if (!v.status.ok()) status.mutable_status()->set_error_message(v.status.message());
    }
    return grpc::Status::OK;
  }

  // As TF Serving: the response's status and the call's both say how applying it went.
  grpc::Status HandleReloadConfigRequest(grpc::ServerContext*,
                                         const tfs::ReloadConfigRequest* request,
                                         tfs::ReloadConfigResponse* response) override {
    const Status applied = core_.reload(request->config());
    response->mutable_status()->set_error_code(
        static_cast<tensorflow::error::Code>(grpc_code_for(applied.code())));
    if (!applied.ok()) response->mutable_status()->set_error_message(applied.message());
    return to_grpc(applied);
  }

 private:
  ServingCore& core_;
};

}  // namespace

struct GrpcFrontend::Impl {
  explicit Impl(ServingCore& core) : prediction(core), models(core), core(core) {}
  PredictionService prediction;
  ModelService models;
  ServingCore& core;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::once_flag stopped;
};

Result<std::unique_ptr<GrpcFrontend>> GrpcFrontend::start(ServingCore& core,
                                                          const std::string& host, int port,
                                                          int64_t max_message_bytes) {
  auto impl = std::make_unique<Impl>(core);
  grpc::ServerBuilder builder;
  const std::string address = host + ":" + std::to_string(port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &impl->port);
  const int limit = static_cast<int>(std::min<int64_t>(max_message_bytes, INT32_MAX));
  builder.SetMaxReceiveMessageSize(limit);
  builder.SetMaxSendMessageSize(limit);
  builder.RegisterService(&impl->prediction);
  builder.RegisterService(&impl->models);
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    return error("cannot listen for gRPC on ", address,
                 " (in use, or not an address of this machine)");
  }
  return std::make_unique<GrpcFrontend>(std::move(impl));
}

GrpcFrontend::GrpcFrontend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcFrontend::~GrpcFrontend() { shutdown(); }

int GrpcFrontend::port() const { return impl_->port; }

void GrpcFrontend::shutdown() {
  std::call_once(impl_->stopped, [this] {
    const auto grace = impl_->core.options().request_timeout;
    impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
    impl_->server->Wait();
  });
}

}  // namespace ic
