// Dynamic batching: HTTP threads queue the preprocessed instances of their requests; one thread
// gathers queued instances into a batch (up to max_batch_size, or whatever has arrived when
// batch_timeout has passed since the oldest was queued), runs the model once, and hands each
// request its rows of logits. The queue is bounded: an instance that does not fit is refused
// at once (the server answers 503) instead of the queue growing without limit.
//
// The wait is for company that is on its way: front ends announce each request from when they
// start preparing it (an Arrival: parsing, decoding) until they submit it. When none is being
// prepared, nothing more can join soon, and what is queued runs at once instead of waiting out
// the timeout (unless BatcherOptions::wait_when_idle, TF Serving's batcher's way). A lone
// request then pays no batching delay, while under load, where requests are always being
// prepared, batches fill as before.
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
  // Wait out batch_timeout even when no other request is being prepared.
  bool wait_when_idle = false;
};

class Batcher {
 public:
  // `on_batch` (may be empty) is called after each batch with its size and duration.
  Batcher(const BatcherOptions& options,
          std::function<void(int64_t size, std::chrono::nanoseconds took)> on_batch);
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // A request a front end is preparing for the queue, from before it is parsed until submit()
  // takes it, or until it is dropped (an error answered instead).
  class Arrival {
   public:
    explicit Arrival(Batcher& batcher);
    ~Arrival();  // an Arrival never submitted leaves here
    Arrival(const Arrival&) = delete;
    Arrival& operator=(const Arrival&) = delete;

   private:
    friend class Batcher;
    Batcher* batcher_;  // null once submitted
  };

  // Queues every instance of `job`, or none: an error when they do not fit in the queue or the
  // batcher is stopping. `arrival` (may be null), the job's announcement, ends here either way.
  Status submit(const std::shared_ptr<BatchJob>& job, Arrival* arrival = nullptr);
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
  // Ends `arrival` if it has not ended; the caller holds mutex_.
  void end_arrival(Arrival& arrival);

  const BatcherOptions options_;
  std::function<void(int64_t, std::chrono::nanoseconds)> on_batch_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  std::chrono::steady_clock::time_point oldest_queued_at_;
  bool stopping_ = false;
  bool no_wait_ = false;
  int64_t arriving_ = 0;       // Arrivals not yet submitted or dropped
  int64_t batches_run_ = 0;    // the batcher thread's own count
  bool trim_pending_ = false;  // a batch ran since memory was last given back
  std::thread thread_;
};

}  // namespace ic
