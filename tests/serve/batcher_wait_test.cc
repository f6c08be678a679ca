// The batcher waits for company only while other requests are being prepared (Batcher::Arrival):
// a lone request runs at once however long batch_timeout is; one queued while another is being
// prepared waits for it and they run as one batch; a request dropped while being prepared
// releases the wait.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "serve/batcher.h"
#include "serve/served_model.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using namespace std::chrono_literals;

class BatcherWait : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::train_model(dir_.path(), 2);
    BackendOptions backend;
    backend.num_threads = 1;
    Result<std::unique_ptr<ServedModel>> loaded = ServedModel::load(backend, dir_.path(), "", 4);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    model_ = std::move(*loaded);
  }

  // A batcher whose batches would wait an hour to fill, recording each batch's size.
  std::unique_ptr<Batcher> batcher() {
    return std::make_unique<Batcher>(BatcherOptions{4, std::chrono::hours(1), 16},
                                     [this](int64_t size, std::chrono::nanoseconds) {
                                       std::lock_guard lock(mutex_);
                                       sizes_.push_back(size);
                                     });
  }
  std::shared_ptr<BatchJob> job() { return std::make_shared<BatchJob>(model_, 1); }
  static bool done_within(BatchJob& job, std::chrono::milliseconds wait) {
    return job.wait_until(std::chrono::steady_clock::now() + wait);
  }
  std::vector<int64_t> sizes() {
    std::lock_guard lock(mutex_);
    return sizes_;
  }

  testing::TempDir dir_;
  std::shared_ptr<ServedModel> model_;
  std::mutex mutex_;
  std::vector<int64_t> sizes_;
};

TEST_F(BatcherWait, ALoneRequestRunsAtOnce) {
  auto b = batcher();
  Batcher::Arrival arrival(*b);
  auto alone = job();
  ASSERT_TRUE(b->submit(alone, &arrival).ok());
  EXPECT_TRUE(done_within(*alone, 30s));  // not the hour
  EXPECT_EQ(sizes(), std::vector<int64_t>{1});
}

TEST_F(BatcherWait, AQueuedRequestWaitsForOneBeingPreparedAndTheyRunTogether) {
  auto b = batcher();
  std::optional<Batcher::Arrival> second(std::in_place, *b);  // being prepared
  Batcher::Arrival first_arrival(*b);
  auto first = job();
  ASSERT_TRUE(b->submit(first, &first_arrival).ok());
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(b->queued(), 1);  // still waiting for the second
  auto later = job();
  ASSERT_TRUE(b->submit(later, &*second).ok());
  EXPECT_TRUE(done_within(*first, 30s));
  EXPECT_TRUE(done_within(*later, 30s));
  EXPECT_EQ(sizes(), std::vector<int64_t>{2});
}

TEST_F(BatcherWait, ARequestDroppedWhileBeingPreparedReleasesTheWait) {
  auto b = batcher();
  std::optional<Batcher::Arrival> failing(std::in_place, *b);  // will be answered an error
  Batcher::Arrival arrival(*b);
  auto queued = job();
  ASSERT_TRUE(b->submit(queued, &arrival).ok());
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(b->queued(), 1);
  failing.reset();
  EXPECT_TRUE(done_within(*queued, 30s));
  EXPECT_EQ(sizes(), std::vector<int64_t>{1});
}

TEST_F(BatcherWait, WaitWhenIdleKeepsALoneRequestWaiting) {
  Batcher b(BatcherOptions{4, 400ms, 16, /*wait_when_idle=*/true}, nullptr);
  Batcher::Arrival arrival(b);
  auto alone = job();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.submit(alone, &arrival).ok());
  EXPECT_TRUE(done_within(*alone, 30s));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 400ms);  // the whole timeout
}

}  // namespace
}  // namespace ic
