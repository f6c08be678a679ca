#include "serve/serving_core.h"

#include <sstream>

#include "io/checkpoint_dir.h"
#include "io/file_system.h"
#include "serve/warmup_replay.h"

namespace ic {

ServingCore::ServingCore(const ServerOptions& options)
    : options_(options), metrics_(std::make_unique<ServerMetrics>(options.max_batch_size)) {
  ServerMetrics* metrics = metrics_.get();
  batcher_ = std::make_unique<Batcher>(
      BatcherOptions{options.max_batch_size, options.batch_timeout, options.max_queue},
      [metrics](int64_t size, std::chrono::nanoseconds took) {
        metrics->record_batch(size, std::chrono::duration<double>(took).count());
      });
}

Result<std::unique_ptr<ServingCore>> ServingCore::create(const ServerOptions& options) {
  if (options.model_dir.empty()) return invalid_argument("give --model_dir");
  // Through the seam: a gs:// model_dir works, an unknown scheme is an error. An object store
  // has no empty directories, so there a prefix with nothing in it yet is fine (unavailable
  // until a checkpoint or an export appears); locally the directory must exist.
  IC_ASSIGN_OR_RETURN(FileSystem * model_fs, file_system_for(options.model_dir));
  if (!model_fs->writes_appear_whole()) {
    IC_ASSIGN_OR_RETURN(bool is_dir, model_fs->is_directory(options.model_dir));
    if (!is_dir) return not_found("--model_dir ", options.model_dir, " is not a directory");
  }
  auto core = std::make_unique<ServingCore>(options);
  Result<std::optional<std::string>> latest = newest_servable(options.model_dir);
  if (!latest.ok()) {
    core->log("no usable checkpoint yet: " + latest.status().message());
  } else if (!latest->has_value()) {
    core->log("no checkpoint or export yet in " + options.model_dir +
              "; answering 503 until one appears");
  } else {
    core->load(**latest);
  }
  ServingCore* self = core.get();
  if (options.poll_interval.count() > 0) core->watcher_ = std::thread([self] { self->watch(); });
  return core;
}

ServingCore::~ServingCore() {
  {
    std::lock_guard lock(watch_mutex_);
    stopping_ = true;
  }
  watch_wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  batcher_->stop();
}

void ServingCore::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

std::shared_ptr<ServedModel> ServingCore::current() const {
  std::lock_guard lock(model_mutex_);
  return model_;
}

std::string ServingCore::name() const {
  std::lock_guard lock(model_mutex_);
  return model_name_;
}

Result<std::shared_ptr<ServedModel>> ServingCore::resolve(
    const std::string& name, const std::optional<std::string>& version) const {
  std::shared_ptr<ServedModel> model = current();
  if (!model) {
    return unavailable("no model is loaded yet (waiting for a checkpoint in ", options_.model_dir,
                       ")");
  }
  const std::string served = this->name();
  if (name != served) {
    return not_found("unknown model '", name, "' (this server serves '", served, "')");
  }
  if (version && *version != std::to_string(model->version())) {
    return not_found("version ", *version, " of '", name, "' is not served (the served version is ",
                     model->version(), ")");
  }
  return model;
}

InstanceOptions ServingCore::instance_options(const ServedModel& model) const {
  return {model.meta().height, model.meta().width, options_.max_image_pixels};
}

Status ServingCore::run(const std::shared_ptr<BatchJob>& job, Clock::time_point arrived,
                        std::optional<Clock::time_point> deadline) const {
  IC_RETURN_IF_ERROR(batcher_->submit(job));
  Clock::time_point until = arrived + options_.request_timeout;
  if (deadline && *deadline < until) until = *deadline;
  if (!job->wait_until(until)) {
    return unavailable("timed out after ", options_.request_timeout.count(),
                       " ms (--request_timeout_ms) waiting for the model");
  }
  return Status();
}

bool ServingCore::load(const std::string& checkpoint) {
  const auto start = Clock::now();
  Result<std::unique_ptr<ServedModel>> loaded =
      ServedModel::load(options_.backend, options_.model_dir, checkpoint, options_.max_batch_size,
                        options_.precision);
  if (loaded.ok()) {
    // A version with warm-up requests replays them before it serves; a bad one never serves.
    Result<std::optional<WarmupReplay>> warmed =
        replay_warmup(**loaded, instance_options(**loaded));
    if (!warmed.ok()) {
      loaded = warmed.status();
    } else if (*warmed) {
      std::ostringstream line;
      line.precision(3);
      line << "warm-up: replayed " << (*warmed)->requests << " requests from " << (*warmed)->file
           << " in " << std::fixed << (*warmed)->milliseconds << " ms";
      log(line.str());
    }
  }
  if (!loaded.ok()) {
    failed_checkpoint_ = checkpoint;
    metrics_->record_load(false, 0);
    const std::shared_ptr<ServedModel> old = current();
    log("could not load a checkpoint: " + loaded.status().message() +
        (old ? "; still serving version " + std::to_string(old->version()) : ""));
    return false;
  }
  std::shared_ptr<ServedModel> fresh = std::move(*loaded);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::shared_ptr<ServedModel> old;
  std::string model_name;
  {
    std::lock_guard lock(model_mutex_);
    if (model_name_.empty()) {
      model_name_ = options_.model_name.empty() ? fresh->meta().model : options_.model_name;
    }
    model_name = model_name_;
    old = std::exchange(model_, fresh);
  }
  metrics_->record_load(true, fresh->version());
  metrics_->record_precision(model_name, precision_name(fresh->precision()));
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

void ServingCore::watch() {
  for (;;) {
    {
      std::unique_lock lock(watch_mutex_);
      if (watch_wake_.wait_for(lock, options_.poll_interval, [&] { return stopping_; })) return;
    }
    Result<std::optional<std::string>> latest = newest_servable(options_.model_dir);
    if (!latest.ok() || !latest->has_value()) continue;  // a checkpoint being written, or none
    const std::string& path = **latest;
    const std::shared_ptr<ServedModel> served = current();
    if ((served && served->checkpoint() == path) || path == failed_checkpoint_) continue;
    load(path);
  }
}

}  // namespace ic
