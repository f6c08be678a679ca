// Dynamic batching: HTTP threads queue the preprocessed instances of their requests; one thread
// gathers queued instances into a batch (up to max_batch_size, or whatever has arrived when
// batch_timeout has passed since the oldest was queued), runs the model once, and hands each
// request its rows of logits. The queue is bounded: an instance that does not fit is refused
// at once (the server answers 503) instead of the queue growing without limit.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "serve/served_model.h"

namespace ic {

// One request's instances, preprocessed for `model`, and their logits once done. A request
// runs entirely on the model it was preprocessed for, even when a newer one is loaded meanwhile.
class BatchJob {
 public:
  BatchJob(std::shared_ptr<ServedModel> model, int64_t count);

  ServedModel& model() const { return *model_; }
  int64_t count() const { return count_; }
  float* image(int64_t i) { return images_.data() + i * model_->image_floats(); }
  const float* logits(int64_t i) const { return logits_.data() + i * model_->num_classes(); }

  // Waits until every instance has run, or `deadline`; false on timeout (the job is then
  // cancelled: its instances still queued are dropped).
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  // How long the model ran the batches that held this job's instances (valid once done): the
  // rest of the wait was the queue.
  std::chrono::steady_clock::duration model_time() const { return model_time_; }

 private:
  friend class Batcher;
  std::shared_ptr<ServedModel> model_;
  int64_t count_;
  std::vector<float> images_;  // [count, H, W, 3]
  std::vector<float> logits_;  // [count, classes]
  std::mutex mutex_;
  std::condition_variable done_;
  int64_t remaining_;
  bool cancelled_ = false;
  std::chrono::steady_clock::duration model_time_{};  // written by the batcher thread
  int64_t last_batch_ = -1;                           // the last batch that ran an instance
};

struct BatcherOptions {
  int64_t max_batch_size = 32;
  std::chrono::microseconds batch_timeout{2000};
  int64_t max_queue = 1024;  // instances waiting, not counting the batch that is running
};

class Batcher {
 public:
  // `on_batch` (may be empty) is called after each batch with its size and duration.
  Batcher(const BatcherOptions& options,
          std::function<void(int64_t size, std::chrono::nanoseconds took)> on_batch);
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues every instance of `job`, or none: an error when they do not fit in the queue or the
  // batcher is stopping.
  Status submit(const std::shared_ptr<BatchJob>& job);
  // Whether `count` instances would fit now (submit() checks again): lets a front end refuse
  // a request before it allocates the request's image buffers.
  Status admit(int64_t count) const;
  // From now on a batch runs as soon as the model is free, without waiting to fill (the
  // server is shutting down: requests in flight are answered without delay). Submits still work.
  void stop_waiting();
  // Runs what is queued, then stops the thread. Later submits fail.
  void stop();
  int64_t queued() const;

 private:
  struct Item {
    std::shared_ptr<BatchJob> job;
    int64_t index;
  };
  void loop();
  // Whether `count` more instances fit in the queue; the caller holds mutex_.
  Status room_for(int64_t count) const;
  // Removes cancelled items from the front; the caller holds mutex_.
  void drop_cancelled_front();

  const BatcherOptions options_;
  std::function<void(int64_t, std::chrono::nanoseconds)> on_batch_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  std::chrono::steady_clock::time_point oldest_queued_at_;
  bool stopping_ = false;
  bool no_wait_ = false;
  int64_t batches_run_ = 0;    // the batcher thread's own count
  bool trim_pending_ = false;  // a batch ran since memory was last given back
  std::thread thread_;
};

}  // namespace ic
