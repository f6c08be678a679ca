// What the REST and the gRPC front ends share: the model being served (loaded at start-up,
// replaced by the watcher when a newer checkpoint or export appears), the batcher with its
// queue limit, the request deadline, label names and metrics. A front end only translates its
// wire format into BatchJobs and the core's Statuses into its own error answers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/status.h"
#include "serve/api.h"
#include "serve/batcher.h"
#include "serve/metrics.h"
#include "serve/server.h"

namespace ic {

class ServingCore {
 public:
  using Clock = std::chrono::steady_clock;

  // Checks model_dir and loads its newest servable (none yet: every request answers
  // unavailable until the watcher finds one); starts the watcher when poll_interval > 0.
  static Result<std::unique_ptr<ServingCore>> create(const ServerOptions& options);
  explicit ServingCore(const ServerOptions& options);  // create() is the way to make one
  ~ServingCore();  // stops the watcher, then runs what is queued and stops the batcher
  ServingCore(const ServingCore&) = delete;
  ServingCore& operator=(const ServingCore&) = delete;

  const ServerOptions& options() const { return options_; }
  ServerMetrics& metrics() { return *metrics_; }
  int64_t queued() const { return batcher_->queued(); }

  // The model answering new requests now (null before the first load), and its name.
  std::shared_ptr<ServedModel> current() const;
  std::string name() const;

  // The model a request names: unavailable before the first load, not_found for another name
  // or a version other than the served one (`version`: its decimal text, unset: any).
  Result<std::shared_ptr<ServedModel>> resolve(const std::string& name,
                                               const std::optional<std::string>& version) const;

  // How instances for `model` are preprocessed (its image size, the pixel limit).
  InstanceOptions instance_options(const ServedModel& model) const;

  // Queues `job` and waits for its logits until `deadline` or the request timeout after
  // `arrived`, whichever comes first: unavailable when the queue is full or time runs out,
  // cancelled when shutting down.
  Status run(const std::shared_ptr<BatchJob>& job, Clock::time_point arrived,
             std::optional<Clock::time_point> deadline = std::nullopt) const;

  // Whether the queue has room for `count` instances now (run() checks again).
  Status admit(int64_t count) const { return batcher_->admit(count); }

  // Shutting down: batches run without waiting to fill.
  void stop_waiting() { batcher_->stop_waiting(); }

 private:
  void log(const std::string& line) const;
  // Loads `checkpoint` (empty: the newest) and makes it the model new requests run on.
  bool load(const std::string& checkpoint);
  void watch();

  ServerOptions options_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<Batcher> batcher_;

  mutable std::mutex model_mutex_;
  std::shared_ptr<ServedModel> model_;  // guarded by model_mutex_
  std::string model_name_;              // guarded by model_mutex_; fixed by the first load

  std::mutex watch_mutex_;
  std::condition_variable watch_wake_;
  bool stopping_ = false;  // guarded by watch_mutex_
  std::string failed_checkpoint_;
  std::thread watcher_;
};

}  // namespace ic
