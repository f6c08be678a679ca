#include "serve/model_manager.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "io/file_system.h"
#include "runtime/inference_model.h"
#include "runtime/precision.h"

namespace ic {
namespace {

using Clock = std::chrono::steady_clock;

// Versions that ended (unloaded, or failed to load) stay in the status list so that a client
// can see what happened, but a model_dir a trainer keeps writing to must not grow it forever.
constexpr size_t kEndedVersionsKept = 16;

std::string join_versions(const std::set<int64_t>& versions) {
  std::string text;
  for (int64_t v : versions) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text.empty() ? "none" : text;
}

}  // namespace

const char* version_state_name(VersionState state) {
  switch (state) {
    case VersionState::start: return "START";
    case VersionState::loading: return "LOADING";
    case VersionState::available: return "AVAILABLE";
    case VersionState::unloading: return "UNLOADING";
    case VersionState::end: return "END";
  }
  return "UNKNOWN";
}

ModelManager::ModelManager(Loader loader, std::function<void(const std::string&)> log)
    : loader_(std::move(loader)), log_(std::move(log)) {}

ModelManager::~ModelManager() { stop(); }

void ModelManager::log(const std::string& line) const {
  if (log_) log_(line);
}

Status ModelManager::apply(const ModelServerSettings& settings, const std::string& source) {
  std::lock_guard apply_lock(apply_mutex_);
  // Every base path is checked before anything changes. An object store has no empty
  // directories, so there a prefix with nothing in it yet is fine (unavailable until a
  // version appears); locally the directory must exist.
  for (const ModelConfigEntry& entry : settings.models) {
    IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(entry.base_path));
    if (fs->writes_appear_whole()) continue;
    IC_ASSIGN_OR_RETURN(bool is_dir, fs->is_directory(entry.base_path));
    if (!is_dir) {
      return not_found(source, ": model '", entry.name, "': base_path ", entry.base_path,
                       " is not a directory");
    }
  }
  std::vector<std::shared_ptr<Model>> next, removed;
  {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<Model>> old = models_;
    for (const ModelConfigEntry& entry : settings.models) {
      // A model keeps its loaded versions when its name and base path stay.
      auto kept = std::find_if(old.begin(), old.end(), [&](const std::shared_ptr<Model>& m) {
        return m && (m->name == entry.name || m->config.name == entry.name) &&
               m->config.base_path == entry.base_path;
      });
      if (kept != old.end()) {
        (*kept)->config = entry;
        if (!entry.name.empty()) (*kept)->name = entry.name;
        next.push_back(std::move(*kept));
      } else {
        auto model = std::make_shared<Model>();
        model->config = entry;
        model->name = entry.name;
        next.push_back(std::move(model));
      }
    }
    for (std::shared_ptr<Model>& m : old)
      if (m) removed.push_back(std::move(m));
    models_ = next;
  }
  // Requests already holding one of their versions finish on it; it is freed with the last.
  for (const std::shared_ptr<Model>& m : removed) log("unloaded model " + m->name);
  for (const std::shared_ptr<Model>& m : next) sync(m);
  return Status();
}

void ModelManager::poll_versions() {
  std::lock_guard apply_lock(apply_mutex_);
  std::vector<std::shared_ptr<Model>> models;
  {
    std::lock_guard lock(mutex_);
    models = models_;
  }
  for (const std::shared_ptr<Model>& m : models) sync(m);
}

void ModelManager::sync(const std::shared_ptr<Model>& model) {
  ModelConfigEntry config;
  {
    std::lock_guard lock(mutex_);
    config = model->config;
  }
  Result<std::map<int64_t, std::string>> found = servable_versions(config.base_path);
  std::string problem;
  if (!found.ok()) {
    problem = "no usable version yet in " + config.base_path + ": " + found.status().message();
  } else if (found->empty()) {
    problem =
        "no checkpoint or export yet in " + config.base_path + "; answering 503 until one appears";
  }
  {
    std::lock_guard lock(mutex_);
    const bool repeated = problem == model->last_poll_error;
    model->last_poll_error = problem;
    // A version being written, or a listing that failed: what is loaded keeps serving.
    if (!problem.empty()) {
      if (!repeated) log(problem);
      return;
    }
  }
  std::set<int64_t> on_disk;
  for (const auto& entry : *found) on_disk.insert(entry.first);
  const std::set<int64_t> wanted = select_versions(config.policy, on_disk);
  // Newest first: with latest N the version most requests will get is ready soonest. The
  // versions waiting for their turn are START meanwhile.
  std::vector<int64_t> to_load;
  {
    std::lock_guard lock(mutex_);
    for (auto it = wanted.rbegin(); it != wanted.rend(); ++it) {
      const std::string& path = found->at(*it);
      auto known = model->versions.find(*it);
      if (known != model->versions.end() &&
          ((known->second.state == VersionState::available && known->second.path == path) ||
           known->second.failed_path == path)) {
        continue;  // loaded, or failed to load from these very files: not retried
      }
      Version& entry = model->versions[*it];
      if (entry.state != VersionState::available) {
        entry.path = path;
        entry.state = VersionState::start;
        entry.status = Status();
      }
      to_load.push_back(*it);
    }
  }
  for (int64_t version : to_load) load(model, version, found->at(version));
  std::lock_guard lock(mutex_);
  const bool serving_wanted = std::any_of(wanted.begin(), wanted.end(), [&](int64_t v) {
    auto known = model->versions.find(v);
    return known != model->versions.end() && known->second.state == VersionState::available;
  });
  for (auto& [number, version] : model->versions) {
    if (version.state != VersionState::available || wanted.contains(number)) continue;
    // Kept while none of the wanted versions could be loaded (even when its files are gone:
    // it is in memory), so that a bad new version never leaves the model without one.
    if (!serving_wanted) continue;
    // New requests no longer get it; those already holding it finish on it. The memory goes
    // when the last of them is answered, and the version is UNLOADING until then.
    version.draining = version.model;
    version.model.reset();
    version.state = VersionState::unloading;
    log("unloading version " + std::to_string(number) + " of " + model->name +
        (version.draining.expired() ? "" : " (it ends when its requests in flight are answered)"));
  }
  for (auto& [number, version] : model->versions) {
    if (version.state == VersionState::unloading && version.draining.expired()) {
      version.state = VersionState::end;
      log("unloaded version " + std::to_string(number) + " of " + model->name);
    }
  }
  // Forget the oldest ended versions beyond the limit.
  size_t ended = 0;
  for (auto it = model->versions.rbegin(); it != model->versions.rend();) {
    if (it->second.state == VersionState::end && ++ended > kEndedVersionsKept) {
      it = std::make_reverse_iterator(model->versions.erase(std::next(it).base()));
    } else {
      ++it;
    }
  }
}

void ModelManager::load(const std::shared_ptr<Model>& model, int64_t version,
                        const std::string& path) {
  std::string name, base_path;
  {
    std::lock_guard lock(mutex_);
    base_path = model->config.base_path;
    Version& entry = model->versions[version];
    // A version already available (its files replaced) serves until the new ones load.
    if (entry.state != VersionState::available) {
      entry.path = path;
      entry.state = VersionState::loading;
    }
    name = model->name;
  }
  const auto start = Clock::now();
  Result<std::shared_ptr<ServedModel>> loaded = loader_(name, base_path, path);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::lock_guard lock(mutex_);
  const std::shared_ptr<ServedModel> before = newest_available(*model);
  Version& entry = model->versions[version];
  if (!loaded.ok()) {
    entry.failed_path = path;
    if (entry.state != VersionState::available) {
      entry.state = VersionState::end;
      entry.status = loaded.status();
    }
    log("could not load a checkpoint: " + loaded.status().message() +
        (before ? "; still serving version " + std::to_string(before->version()) : ""));
    return;
  }
  const std::shared_ptr<ServedModel>& fresh = *loaded;
  if (model->name.empty()) model->name = fresh->meta().model;
  entry.path = path;
  entry.failed_path.clear();
  entry.status = Status();
  entry.state = VersionState::available;
  entry.draining.reset();
  entry.model = fresh;
  const bool replaces = before && before->version() < fresh->version();
  std::ostringstream line;
  line.precision(3);
  line << (replaces ? "reloaded: now serving version " : "loaded version ") << fresh->version()
       << (replaces ? " (was " + std::to_string(before->version()) + ")" : std::string()) << " of "
       << model->name << " from " << fresh->checkpoint() << " (" << describe(fresh->meta())
       << "), precision " << precision_name(fresh->precision()) << " (" << fresh->precision_reason()
       << ")";
  if (const std::string slices = fresh->slices_summary(); !slices.empty())
    line << ", batches " << slices;
  line << ", in " << seconds << " s";
  log(line.str());
}

std::shared_ptr<ServedModel> ModelManager::newest_available(const Model& model) {
  for (auto it = model.versions.rbegin(); it != model.versions.rend(); ++it) {
    if (it->second.state == VersionState::available) return it->second.model;
  }
  return nullptr;
}

const ModelManager::Model* ModelManager::find(const std::string& name) const {
  for (const std::shared_ptr<Model>& m : models_)
    if (m->name == name) return m.get();
  return nullptr;
}

std::string ModelManager::names() const {
  std::string text;
  for (const std::shared_ptr<Model>& m : models_) {
    if (m->name.empty()) continue;
    text += (text.empty() ? "'" : ", '") + m->name + "'";
  }
  return text.empty() ? "none yet" : text;
}

Result<std::shared_ptr<ServedModel>> ModelManager::resolve(const ModelRequest& request) const {
  std::lock_guard lock(mutex_);
  const Model* model = find(request.name);
  if (!model) {
    // A model whose name comes from its first load answers nothing until then.
    for (const std::shared_ptr<Model>& m : models_) {
      if (m->name.empty()) {
        return unavailable("no model is loaded yet (waiting for a checkpoint in ",
                           m->config.base_path, ")");
      }
    }
    return not_found("unknown model '", request.name, "' (this server serves ", names(), ")");
  }
  std::optional<int64_t> version = request.version;
  if (request.label) {
    auto label = model->config.labels.find(*request.label);
    if (label == model->config.labels.end()) {
      return not_found("version label '", *request.label, "' of model '", model->name,
                       "' is not known");
    }
    version = label->second;
    auto known = model->versions.find(*version);
    if (known == model->versions.end() || known->second.state != VersionState::available) {
      return unavailable("version label '", *request.label, "' of model '", model->name,
                         "' points at version ", *version, ", which is not available");
    }
    return known->second.model;
  }
  if (version) {
    auto known = model->versions.find(*version);
    if (known != model->versions.end() && known->second.state == VersionState::available) {
      return known->second.model;
    }
    std::set<int64_t> available;
    for (const auto& [number, v] : model->versions)
      if (v.state == VersionState::available) available.insert(number);
    return not_found("version ", *version, " of '", model->name,
                     "' is not served (the served versions are ", join_versions(available), ")");
  }
  std::shared_ptr<ServedModel> newest = newest_available(*model);
  if (!newest) {
    return unavailable("no version of '", model->name, "' is loaded yet (waiting for one in ",
                       model->config.base_path, ")");
  }
  return newest;
}

VersionState ModelManager::reported_state(const Version& version) {
  if (version.state == VersionState::unloading && version.draining.expired())
    return VersionState::end;
  return version.state;
}

Result<std::vector<VersionStatus>> ModelManager::status(const std::string& name,
                                                        std::optional<int64_t> version) const {
  std::vector<VersionStatus> out;
  {
    std::lock_guard lock(mutex_);
    const Model* model = find(name);
    if (model) {
      for (bool available : {true, false}) {
        for (auto it = model->versions.rbegin(); it != model->versions.rend(); ++it) {
          if ((it->second.state == VersionState::available) != available) continue;
          if (version && it->first != *version) continue;
          out.push_back({it->first, reported_state(it->second), it->second.status});
        }
      }
    }
  }
  if (!out.empty()) return out;
  // No version known: answered as a request would be (unknown model, nothing loaded yet, or
  // a version that is not served).
  IC_RETURN_IF_ERROR(resolve({name, version, std::nullopt}).status());
  return not_found("version ", version.value_or(0), " of '", name, "' is not known");
}

std::string ModelManager::default_name() const {
  std::lock_guard lock(mutex_);
  return models_.empty() ? std::string() : models_.front()->name;
}

std::shared_ptr<ServedModel> ModelManager::default_model() const {
  std::lock_guard lock(mutex_);
  return models_.empty() ? nullptr : newest_available(*models_.front());
}

void ModelManager::poll_loop(std::chrono::milliseconds interval,
                             const std::function<void()>& work) {
  for (;;) {
    {
      std::unique_lock lock(stop_mutex_);
      if (stop_wake_.wait_for(lock, interval, [&] { return stopping_; })) return;
    }
    work();
  }
}

void ModelManager::start(std::chrono::milliseconds file_system_interval,
                         const std::string& config_file, std::chrono::milliseconds config_interval,
                         std::optional<ModelServerSettings> applied_from_file) {
  {
    std::lock_guard lock(mutex_);
    file_settings_ = std::move(applied_from_file);
  }
  if (file_system_interval.count() > 0) {
    threads_.emplace_back([this, file_system_interval] {
      poll_loop(file_system_interval, [this] { poll_versions(); });
    });
  }
  if (!config_file.empty() && config_interval.count() > 0) {
    threads_.emplace_back([this, config_file, config_interval] {
      poll_loop(config_interval, [this, config_file] {
        Result<ModelServerSettings> settings = read_model_config_file(config_file);
        if (!settings.ok()) {
          log("ignored the new model config: " + settings.status().message() +
              "; still serving the previous one");
          return;
        }
        {
          std::lock_guard lock(mutex_);
          if (file_settings_ && *file_settings_ == *settings) return;  // unchanged
        }
        const Status applied = apply(*settings, config_file);
        if (!applied.ok()) {
          log("ignored the new model config: " + applied.message() +
              "; still serving the previous one");
          return;
        }
        std::lock_guard lock(mutex_);
        file_settings_ = std::move(*settings);
        log("applied the model config in " + config_file);
      });
    });
  }
}

void ModelManager::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_wake_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace ic
