// A number of bytes held at once against a limit, shared between threads: serve's REST and
// gRPC front ends count the request bytes they hold against one budget, so together they
// stay under --max_inflight_bytes.
#pragma once

#include <atomic>
#include <cstddef>

namespace ic {

class ByteBudget {
 public:
  explicit ByteBudget(size_t limit) : limit_(limit) {}
  ByteBudget(const ByteBudget&) = delete;
  ByteBudget& operator=(const ByteBudget&) = delete;

  // Adds `bytes` when they fit under the limit with what is held; false (nothing added) when
  // they do not.
  bool try_reserve(size_t bytes) {
    size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ || used > limit_ - bytes) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void release(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }

  // Bytes reserved for one scope (one gRPC call): released when it ends.
  class Hold {
   public:
    Hold(ByteBudget& budget, size_t bytes)
        : budget_(budget), held_(budget.try_reserve(bytes)), bytes_(held_ ? bytes : 0) {}
    ~Hold() { budget_.release(bytes_); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    bool held() const { return held_; }

   private:
    ByteBudget& budget_;
    bool held_;
    size_t bytes_;
  };

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
};

}  // namespace ic
