// Per-op-kind time of forward and backward kernels, for performance work. Enabled by the
// environment variable IC_PROFILE=1 when a graph is compiled; the table goes to stderr when
// the compiled graph is destroyed. Each timed kernel is followed by a backend synchronize,
// so profiled steps are slower than normal ones (and GPU times are exact).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ic {

class OpProfile {
 public:
  explicit OpProfile(Backend& backend) : backend_(backend) {}

  template <typename Run>
  void run(const char* op, bool backward, Run&& kernel) {
    const auto start = std::chrono::steady_clock::now();
    kernel();
    backend_.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    record(op, backward, seconds);
  }

  std::string table() const;  // one line per op kind, slowest first
  void print() const;         // table() to stderr

 private:
  struct Entry {
    std::string op;
    double forward_seconds = 0, backward_seconds = 0;
    long forward_calls = 0, backward_calls = 0;
  };
  void record(const char* op, bool backward, double seconds);

  Backend& backend_;
  std::vector<Entry> entries_;
};

}  // namespace ic
