// Where a compiled graph's time goes, for performance work. Enabled by the environment
// variable IC_PROFILE when a graph is compiled: IC_PROFILE=1 sums the kernels' time per op kind,
// IC_PROFILE=layers per node (with the implementation its backend chose). The table goes to
// stderr when the compiled graph is destroyed. Each timed kernel is followed by a backend
// synchronize, so profiled steps are slower than normal ones (and GPU times are exact).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ic {

class OpProfile {
 public:
  enum class Grouping { op_kind, layer };
  OpProfile(Backend& backend, Grouping grouping) : backend_(backend), grouping_(grouping) {}

  // The grouping IC_PROFILE asks for; none where it is unset or names none.
  static std::optional<Grouping> requested();

  // The line that the kernel of node `node` (of kind `op`) adds its time to: looked up once,
  // when the graph is compiled, so that a profiled step does no lookup. `kernel` must outlive
  // the profile's table (its implementation is read then, after any choice it makes by timing).
  size_t entry(const char* op, const std::string& node, const OpKernel& kernel);

  // Times one forward or backward call of an entry's kernel.
  template <typename Run>
  void run(size_t entry, bool backward, Run&& run_kernel) {
    const auto start = std::chrono::steady_clock::now();
    run_kernel();
    backend_.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Entry& e = entries_[entry];
    (backward ? e.backward_seconds : e.forward_seconds) += seconds;
    ++(backward ? e.backward_calls : e.forward_calls);
  }

  std::string table() const;  // one line per op kind or node, slowest first
  void print() const;         // table() to stderr

 private:
  struct Entry {
    std::string name;                  // the op kind, or the node's name
    const char* op = "";               // per node: its kind
    const OpKernel* kernel = nullptr;  // per node: for its implementation
    double forward_seconds = 0, backward_seconds = 0;
    long forward_calls = 0, backward_calls = 0;
  };

  Backend& backend_;
  Grouping grouping_;
  std::vector<Entry> entries_;
};

}  // namespace ic
