// The set of served models (serve/model_config.h's settings applied): each model with the
// versions its policy selects from its base path, and each version's state as TF Serving
// reports it (START, LOADING, AVAILABLE, UNLOADING, END). A poll thread loads versions as they
// appear and unloads those the policy no longer selects; a second one re-reads the config file
// when asked to. Requests resolve to a shared_ptr of a loaded version: a version or a model
// that is unloaded meanwhile stays alive until its last request in flight is answered.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "serve/model_config.h"
#include "serve/served_model.h"

namespace ic {

enum class VersionState { start, loading, available, unloading, end };
// "START", "LOADING", "AVAILABLE", "UNLOADING", "END" (TF Serving's names).
const char* version_state_name(VersionState state);

struct VersionStatus {
  int64_t version = 0;
  VersionState state = VersionState::start;
  Status status;  // a failed load: END with its error
};

// What a request names: a model, and a version number or a version label (neither: the
// highest available version).
struct ModelRequest {
  std::string name;
  std::optional<int64_t> version;
  std::optional<std::string> label;
};

class ModelManager {
 public:
  // Loads the servable at `path` (a version of model `name` in `base_path`), ready to answer.
  using Loader = std::function<Result<std::shared_ptr<ServedModel>>(
      const std::string& name, const std::string& base_path, const std::string& path)>;
  ModelManager(Loader loader, std::function<void(const std::string&)> log);
  ~ModelManager();  // stop()
  ModelManager(const ModelManager&) = delete;
  ModelManager& operator=(const ModelManager&) = delete;

  // Serves `settings` (from `source`, named in errors): models no longer listed are unloaded,
  // new ones are added and their versions loaded before this returns, kept ones take their new
  // policy and labels. A local base_path that is not a directory is refused (not_found), and
  // then nothing changes.
  Status apply(const ModelServerSettings& settings, const std::string& source);

  // Checks every model's base path once: loads the versions its policy selects that are not
  // loaded yet, then unloads the others (only once a selected version is available, so that
  // a model never stops answering because its newest version cannot be loaded or its files
  // were removed).
  void poll_versions();

  // Polls base paths every `file_system_interval` (0: never) and, when `config_file` is given,
  // re-reads it every `config_interval` (0: never): a config that does not parse or apply is
  // logged and the old one keeps serving. `applied_from_file`: what apply() was given from
  // that file at start-up (re-read unchanged, it is not applied again).
  void start(std::chrono::milliseconds file_system_interval, const std::string& config_file,
             std::chrono::milliseconds config_interval,
             std::optional<ModelServerSettings> applied_from_file);
  void stop();

  // The version a request names: not_found for an unknown model, version or label;
  // unavailable while the model has no version loaded, or a label's version is not available.
  Result<std::shared_ptr<ServedModel>> resolve(const ModelRequest& request) const;

  // Every version of `name` the server knows (only `version`, when given), available ones
  // first, newest first within each group: the first one is the version requests without a
  // version get.
  Result<std::vector<VersionStatus>> status(const std::string& name,
                                            std::optional<int64_t> version) const;

  // The first model of the config and its highest available version (null: none yet).
  std::string default_name() const;
  std::shared_ptr<ServedModel> default_model() const;

 private:
  struct Version {
    std::string path;
    VersionState state = VersionState::start;
    Status status;
    std::shared_ptr<ServedModel> model;  // set while available
    // While UNLOADING: the model that requests still hold. The version is END once the last
    // of them is answered and the model's memory is gone.
    std::weak_ptr<ServedModel> draining;
    std::string failed_path;  // files that failed to load: not tried again
  };
  struct Model {
    ModelConfigEntry config;
    std::string name;  // config.name, or (when that is empty) the first loaded model's
    std::map<int64_t, Version> versions;
    std::string last_poll_error;  // logged once
  };

  // Brings `model`'s versions in line with its base path; the caller holds apply_mutex_.
  void sync(const std::shared_ptr<Model>& model);
  void load(const std::shared_ptr<Model>& model, int64_t version, const std::string& path);
  void log(const std::string& line) const;
  // The caller holds mutex_.
  const Model* find(const std::string& name) const;
  std::string names() const;
  static std::shared_ptr<ServedModel> newest_available(const Model& model);
  // UNLOADING while a request holds the version's model, then END.
  static VersionState reported_state(const Version& version);
  void poll_loop(std::chrono::milliseconds interval, const std::function<void()>& work);

  Loader loader_;
  std::function<void(const std::string&)> log_;

  std::mutex apply_mutex_;  // one apply or poll at a time; held while versions load
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Model>> models_;        // guarded by mutex_, as every Model's fields
  std::optional<ModelServerSettings> file_settings_;  // the config file's last applied

  std::mutex stop_mutex_;
  std::condition_variable stop_wake_;
  bool stopping_ = false;  // guarded by stop_mutex_
  std::vector<std::thread> threads_;
};

}  // namespace ic
