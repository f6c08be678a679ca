#include "serve/serving_core.h"

#include <sstream>

#include "core/openmp_env.h"
#include "io/file_system.h"
#include "serve/model_config.h"
#include "serve/warmup_replay.h"

namespace ic {

ServingCore::ServingCore(const ServerOptions& options)
    : options_(options),
      metrics_(std::make_unique<ServerMetrics>(options.max_batch_size)),
      inflight_budget_(std::make_shared<ByteBudget>(options.max_inflight_bytes)) {
  ServerMetrics* metrics = metrics_.get();
  batcher_ = std::make_unique<Batcher>(
      BatcherOptions{options.max_batch_size, options.batch_timeout, options.max_queue,
                     options.batch_wait_when_idle},
      [metrics](int64_t size, std::chrono::nanoseconds took) {
        metrics->record_batch(size, std::chrono::duration<double>(took).count());
      });
  manager_ = std::make_unique<ModelManager>(
      [this](const std::string& name, const std::string& base_path, const std::string& path) {
        return load(name, base_path, path);
      },
      options.log);
}

Result<std::unique_ptr<ServingCore>> ServingCore::create(const ServerOptions& options) {
  const bool from_file = !options.model_config_file.empty();
  if (from_file && (!options.model_dir.empty() || !options.model_name.empty())) {
    return invalid_argument(
        "--model_config_file names the models: give it, or --model_dir (and --model_name), "
        "not both");
  }
  if (!from_file && options.model_dir.empty()) {
    return invalid_argument("give --model_dir or --model_config_file");
  }
  ModelServerSettings settings;
  std::string source;
  if (from_file) {
    IC_ASSIGN_OR_RETURN(settings, read_model_config_file(options.model_config_file));
    source = options.model_config_file;
  } else {
    // Through the seam: a gs:// model_dir works, an unknown scheme is an error. An object
    // store has no empty directories, so there a prefix with nothing in it yet is fine
    // (unavailable until a checkpoint or an export appears); locally the directory must exist.
    IC_ASSIGN_OR_RETURN(FileSystem * model_fs, file_system_for(options.model_dir));
    if (!model_fs->writes_appear_whole()) {
      IC_ASSIGN_OR_RETURN(bool is_dir, model_fs->is_directory(options.model_dir));
      if (!is_dir) return not_found("--model_dir ", options.model_dir, " is not a directory");
    }
    // One model, its newest version; its name is the checkpoint's model unless given.
    settings.models.push_back({options.model_name, options.model_dir, VersionPolicy{}, {}});
    source = "--model_dir";
  }
  auto core = std::make_unique<ServingCore>(options);
  IC_RETURN_IF_ERROR(core->manager_->apply(settings, source));
  core->manager_->start(options.poll_interval, options.model_config_file, options.model_config_poll,
                        from_file ? std::optional(settings) : std::nullopt);
  return core;
}

ServingCore::~ServingCore() {
  manager_->stop();
  batcher_->stop();
}

void ServingCore::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

std::shared_ptr<ServedModel> ServingCore::current() const { return manager_->default_model(); }

std::string ServingCore::name() const { return manager_->default_name(); }

Result<std::shared_ptr<ServedModel>> ServingCore::resolve(const ModelRequest& request) const {
  return manager_->resolve(request);
}

Result<std::vector<VersionStatus>> ServingCore::status(const std::string& name,
                                                       std::optional<int64_t> version) const {
  return manager_->status(name, version);
}

Status ServingCore::reload(const tensorflow::serving::ModelServerConfig& config) {
  const std::string source = "the reload request";
  IC_ASSIGN_OR_RETURN(ModelServerSettings settings, model_settings_from_proto(config, source));
  IC_RETURN_IF_ERROR(manager_->apply(settings, source));
  log("applied the model config of a reload request");
  return Status();
}

InstanceOptions ServingCore::instance_options(const ServedModel& model) const {
  return {model.meta().height, model.meta().width, options_.max_image_pixels,
          model.meta().preprocessing};
}

Status ServingCore::run(const std::shared_ptr<BatchJob>& job, Batcher::Arrival& arrival,
                        Clock::time_point arrived,
                        std::optional<Clock::time_point> deadline) const {
  IC_RETURN_IF_ERROR(batcher_->submit(job, &arrival));
  Clock::time_point until = arrived + options_.request_timeout;
  if (deadline && *deadline < until) until = *deadline;
  if (!job->wait_until(until)) {
    return unavailable("timed out after ", options_.request_timeout.count(),
                       " ms (--request_timeout_ms) waiting for the model");
  }
  return Status();
}

Result<std::shared_ptr<ServedModel>> ServingCore::load(const std::string& name,
                                                       const std::string& base_path,
                                                       const std::string& path) {
  // Compiled and warmed up on a thread that ends afterwards, so that only the batcher's thread
  // keeps an OpenMP team (core/openmp_env.h: a second one made every forward wait).
  Result<std::unique_ptr<ServedModel>> loaded = on_a_thread_of_its_own([&] {
    Result<std::unique_ptr<ServedModel>> model = ServedModel::load(
        options_.backend, base_path, path, options_.max_batch_size, options_.precision);
    if (!model.ok()) return model;
    // A version with warm-up requests replays them before it serves; a bad one never serves.
    Result<std::optional<WarmupReplay>> warmed = replay_warmup(**model, instance_options(**model));
    if (!warmed.ok()) return Result<std::unique_ptr<ServedModel>>(warmed.status());
    if (*warmed) {
      std::ostringstream line;
      line.precision(3);
      line << "warm-up: replayed " << (*warmed)->requests << " requests from " << (*warmed)->file
           << " in " << std::fixed << (*warmed)->milliseconds << " ms";
      log(line.str());
    }
    return model;
  });
  if (!loaded.ok()) {
    metrics_->record_load(false, 0);
    return loaded.status();
  }
  std::shared_ptr<ServedModel> fresh = std::move(*loaded);
  metrics_->record_load(true, fresh->version());
  metrics_->record_precision(name.empty() ? fresh->meta().model : name,
                             precision_name(fresh->precision()));
  return fresh;
}

}  // namespace ic
