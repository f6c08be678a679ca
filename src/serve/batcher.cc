#include "serve/batcher.h"

#include <malloc.h>

#include <algorithm>
#include <cstring>

namespace ic {

constexpr auto kIdleBeforeTrim = std::chrono::seconds(1);

BatchJob::BatchJob(std::shared_ptr<ServedModel> model, int64_t count)
    : model_(std::move(model)),
      count_(count),
      images_(static_cast<size_t>(count * model_->image_floats())),
      logits_(static_cast<size_t>(count * model_->num_classes())),
      remaining_(count) {}

bool BatchJob::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (done_.wait_until(lock, deadline, [&] { return remaining_ == 0; })) return true;
  cancelled_ = true;
  return false;
}

Batcher::Batcher(const BatcherOptions& options,
                 std::function<void(int64_t, std::chrono::nanoseconds)> on_batch)
    : options_(options), on_batch_(std::move(on_batch)) {
  thread_ = std::thread([this] { loop(); });
}

Batcher::~Batcher() { stop(); }

Status Batcher::room_for(int64_t count) const {
  const int64_t queued = static_cast<int64_t>(queue_.size());
  // Both refusals are the queue's, unavailable as TensorFlow's batch scheduler says for a
  // full queue: the server answers them alike (503).
  if (count > options_.max_queue) {
    return unavailable("a request of ", count, " instances can never fit the queue (",
                       "--max_queue=", options_.max_queue, "); send fewer per request");
  }
  if (queued + count > options_.max_queue) {
    return unavailable("the queue is full (", queued,
                       " instances waiting, --max_queue=", options_.max_queue, "); retry later");
  }
  return Status();
}

Status Batcher::admit(int64_t count) const {
  std::lock_guard lock(mutex_);
  return room_for(count);
}

Batcher::Arrival::Arrival(Batcher& batcher) : batcher_(&batcher) {
  std::lock_guard lock(batcher.mutex_);
  ++batcher.arriving_;
}

Batcher::Arrival::~Arrival() {
  if (!batcher_) return;
  Batcher& batcher = *batcher_;
  {
    std::lock_guard lock(batcher.mutex_);
    batcher.end_arrival(*this);
  }
  batcher.wake_.notify_one();
}

void Batcher::end_arrival(Arrival& arrival) {
  if (!arrival.batcher_) return;
  arrival.batcher_ = nullptr;
  --arriving_;
}

Status Batcher::submit(const std::shared_ptr<BatchJob>& job, Arrival* arrival) {
  {
    std::lock_guard lock(mutex_);
    if (arrival) end_arrival(*arrival);
    if (stopping_) return cancelled("the server is shutting down");
    IC_RETURN_IF_ERROR(room_for(job->count()));
    if (queue_.empty()) oldest_queued_at_ = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < job->count(); ++i) queue_.push_back({job, i});
  }
  wake_.notify_one();
  return Status();
}

void Batcher::stop_waiting() {
  {
    std::lock_guard lock(mutex_);
    no_wait_ = true;
  }
  wake_.notify_one();
}

void Batcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

int64_t Batcher::queued() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(queue_.size());
}

void Batcher::drop_cancelled_front() {
  while (!queue_.empty()) {
    BatchJob& job = *queue_.front().job;
    std::lock_guard job_lock(job.mutex_);
    if (!job.cancelled_) return;
    queue_.pop_front();
  }
}

void Batcher::loop() {
  std::vector<Item> batch;
  std::vector<const float*> images;
  std::vector<float> logits;
  batch.reserve(static_cast<size_t>(options_.max_batch_size));
  images.reserve(static_cast<size_t>(options_.max_batch_size));
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      const auto has_work = [&] { return !queue_.empty() || stopping_; };
      if (trim_pending_ && !wake_.wait_for(lock, kIdleBeforeTrim, has_work)) {
        // Idle since the last batch: give the freed request buffers back to the system, so
        // that a burst of large requests does not stay in the resident size for good (glibc
        // keeps freed memory in its per-thread arenas otherwise).
        trim_pending_ = false;
        lock.unlock();
        malloc_trim(0);
        lock.lock();
      }
      wake_.wait(lock, has_work);
      if (queue_.empty()) return;  // stopping, and nothing left
      // Wait for a full batch, at most batch_timeout after the oldest instance was queued, and
      // only while other requests are being prepared; when stopping, run what there is.
      wake_.wait_until(lock, oldest_queued_at_ + options_.batch_timeout, [&] {
        return static_cast<int64_t>(queue_.size()) >= options_.max_batch_size || stopping_ ||
               no_wait_ || (arriving_ == 0 && !options_.wait_when_idle);
      });
      drop_cancelled_front();
      if (queue_.empty()) continue;
      // One model per batch: the instances of a newer model wait for the next one.
      ServedModel* model = &queue_.front().job->model();
      while (!queue_.empty() && static_cast<int64_t>(batch.size()) < options_.max_batch_size &&
             &queue_.front().job->model() == model) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      // What is left waits from now.
      oldest_queued_at_ = std::chrono::steady_clock::now();
    }
    ServedModel& model = batch.front().job->model();
    images.clear();
    for (Item& item : batch) images.push_back(item.job->image(item.index));
    const int64_t count = static_cast<int64_t>(batch.size());
    logits.resize(static_cast<size_t>(count * model.num_classes()));
    const auto start = std::chrono::steady_clock::now();
    model.run(images.data(), count, logits.data());
    const auto took = std::chrono::steady_clock::now() - start;
    // Counted before anyone is answered, so a client that reads /metrics after its answer
    // sees its batch.
    if (on_batch_) on_batch_(count, std::chrono::duration_cast<std::chrono::nanoseconds>(took));
    const size_t classes = static_cast<size_t>(model.num_classes());
    for (int64_t i = 0; i < count; ++i) {
      BatchJob& job = *batch[i].job;
      std::lock_guard job_lock(job.mutex_);
      std::memcpy(job.logits_.data() + batch[i].index * classes, logits.data() + i * classes,
                  classes * sizeof(float));
      // A job's model time: each batch that ran some of its instances, counted once.
      if (job.last_batch_ != batches_run_) {
        job.last_batch_ = batches_run_;
        job.model_time_ += took;
      }
      if (--job.remaining_ == 0) job.done_.notify_all();
    }
    batch.clear();
    ++batches_run_;
    trim_pending_ = true;
  }
}

}  // namespace ic
