// What the REST and the gRPC front ends share: the served models (serve/model_manager.h: the
// models of a --model_config_file, or the one of --model_dir, each with the versions its
// policy selects, reloaded as new ones appear), the batcher with its queue limit, the request
// deadline, label names and metrics. A front end only translates its wire format into a
// ModelRequest and BatchJobs, and the core's Statuses into its own error answers.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/byte_budget.h"
#include "core/status.h"
#include "proto/tensorflow_serving/model_server_config.pb.h"
#include "serve/api.h"
#include "serve/batcher.h"
#include "serve/metrics.h"
#include "serve/model_manager.h"
#include "serve/server.h"

namespace ic {

class ServingCore {
 public:
  using Clock = std::chrono::steady_clock;

  // Checks the options (--model_dir or --model_config_file, not both), loads what the config
  // selects (a model with nothing to serve yet answers unavailable until the poll finds a
  // version), and starts the polls.
  static Result<std::unique_ptr<ServingCore>> create(const ServerOptions& options);
  explicit ServingCore(const ServerOptions& options);  // create() is the way to make one
  ~ServingCore();  // stops the polls, then runs what is queued and stops the batcher
  ServingCore(const ServingCore&) = delete;
  ServingCore& operator=(const ServingCore&) = delete;

  const ServerOptions& options() const { return options_; }
  ServerMetrics& metrics() { return *metrics_; }
  // The request bytes both front ends hold at once (REST bodies, gRPC messages), under
  // options().max_inflight_bytes.
  const std::shared_ptr<ByteBudget>& inflight_budget() const { return inflight_budget_; }
  int64_t queued() const { return batcher_->queued(); }

  // The first model's newest available version (null before its first load), and its name.
  std::shared_ptr<ServedModel> current() const;
  std::string name() const;

  // The version a request names (serve/model_manager.h): not_found for an unknown model,
  // version or label, unavailable while nothing is loaded for it.
  Result<std::shared_ptr<ServedModel>> resolve(const ModelRequest& request) const;
  // The states of a model's versions (all, or only `version`).
  Result<std::vector<VersionStatus>> status(const std::string& name,
                                            std::optional<int64_t> version) const;
  // Serves `config` instead (HandleReloadConfigRequest): checked, then applied as a re-read
  // config file is; on an error nothing changes.
  Status reload(const tensorflow::serving::ModelServerConfig& config);

  // How instances for `model` are preprocessed (its image size, the pixel limit).
  InstanceOptions instance_options(const ServedModel& model) const;

  // Announces a request a front end starts preparing (parsing, decoding), before anything
  // else: while some are, a queued batch waits for them (Batcher::Arrival). Ends at run().
  Batcher::Arrival arriving() const { return Batcher::Arrival(*batcher_); }

  // Queues `job` (its announcement `arrival` ends) and waits for its logits until `deadline`
  // or the request timeout after `arrived`, whichever comes first: unavailable when the queue
  // is full or time runs out, cancelled when shutting down.
  Status run(const std::shared_ptr<BatchJob>& job, Batcher::Arrival& arrival,
             Clock::time_point arrived,
             std::optional<Clock::time_point> deadline = std::nullopt) const;

  // Whether the queue has room for `count` instances now (run() checks again).
  Status admit(int64_t count) const { return batcher_->admit(count); }

  // Shutting down: batches run without waiting to fill.
  void stop_waiting() { batcher_->stop_waiting(); }

 private:
  void log(const std::string& line) const;
  // Loads the servable at `path` and replays its warm-up requests.
  Result<std::shared_ptr<ServedModel>> load(const std::string& name, const std::string& base_path,
                                            const std::string& path);

  ServerOptions options_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::shared_ptr<ByteBudget> inflight_budget_;
  // One batcher for every model: it runs one batch at a time, each of one model's version
  // (a BatchJob carries its model), so ServedModel::run never has two callers.
  std::unique_ptr<Batcher> batcher_;
  std::unique_ptr<ModelManager> manager_;
};

}  // namespace ic
