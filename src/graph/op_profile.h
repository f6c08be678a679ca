// Where a compiled graph's time goes, for performance work. Enabled by the environment
// variable IC_PROFILE when a graph is compiled: IC_PROFILE=1 sums the kernels' time per op kind,
// IC_PROFILE=layers per node (with the implementation its backend chose). The table goes to
// stderr when the compiled graph is destroyed. Each timed kernel is followed by a backend
// synchronize, so profiled steps are slower than normal ones (and GPU times are exact).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"

namespace ic {

class OpProfile {
 public:
  enum class Grouping { op_kind, layer };
  OpProfile(Backend& backend, Grouping grouping) : backend_(backend), grouping_(grouping) {}

  // The grouping IC_PROFILE asks for; none where it is unset or names none.
  static std::optional<Grouping> requested();

  // Times `kernel` (a forward or backward call of node `node`'s kernel, `op` its kind).
  template <typename Run>
  void run(const char* op, const std::string& node, const OpKernel& kernel, bool backward,
           Run&& run_kernel) {
    const auto start = std::chrono::steady_clock::now();
    run_kernel();
    backend_.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    record(op, node, kernel, backward, seconds);
  }

  std::string table() const;  // one line per op kind or node, slowest first
  void print() const;         // table() to stderr

 private:
  struct Entry {
    std::string name;            // the op kind, or the node's name
    std::string implementation;  // per node: the op kind and the backend's choice
    double forward_seconds = 0, backward_seconds = 0;
    long forward_calls = 0, backward_calls = 0;
  };
  void record(const char* op, const std::string& node, const OpKernel& kernel, bool backward,
              double seconds);

  Backend& backend_;
  Grouping grouping_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;  // entries_ by name
};

}  // namespace ic
