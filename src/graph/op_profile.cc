#include "graph/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ic {

std::optional<OpProfile::Grouping> OpProfile::requested() {
  const char* env = std::getenv("IC_PROFILE");
  if (env == nullptr) return std::nullopt;
  if (std::strcmp(env, "layers") == 0) return Grouping::layer;
  if (env[0] == '1') return Grouping::op_kind;
  return std::nullopt;
}

size_t OpProfile::entry(const char* op, const std::string& node, const OpKernel& kernel) {
  if (grouping_ == Grouping::layer) {
    entries_.push_back(Entry{node, op, &kernel});
    return entries_.size() - 1;
  }
  // A handful of op kinds, looked up once per node at compile time.
  const auto found =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.name == op; });
  if (found != entries_.end()) return static_cast<size_t>(found - entries_.begin());
  entries_.push_back(Entry{op});
  return entries_.size() - 1;
}

std::string OpProfile::table() const {
  std::vector<Entry> sorted = entries_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    return a.forward_seconds + a.backward_seconds > b.forward_seconds + b.backward_seconds;
  });
  double total = 0;
  for (const Entry& e : sorted) total += e.forward_seconds + e.backward_seconds;
  const bool by_layer = grouping_ == Grouping::layer;
  // The first column padded to this width (longer names push the numbers right).
  const size_t name_width = by_layer ? 48 : 22;
  auto padded = [&](std::string name) {
    name.resize(std::max(name.size(), name_width), ' ');
    return name;
  };
  std::string out =
      padded(by_layer ? "node" : "op") + "  forward s  calls   backward s  calls   share\n";
  char numbers[96];
  for (const Entry& e : sorted) {
    const double share = total > 0 ? 100.0 * (e.forward_seconds + e.backward_seconds) / total : 0;
    std::snprintf(numbers, sizeof numbers, " %10.4f %6ld %12.4f %6ld %6.1f%%", e.forward_seconds,
                  e.forward_calls, e.backward_seconds, e.backward_calls, share);
    out += padded(e.name) + numbers;
    if (by_layer) {
      const std::string chosen = e.kernel->implementation();
      out += std::string("  ") + e.op + (chosen.empty() ? "" : ": " + chosen);
    }
    out += "\n";
  }
  std::snprintf(numbers, sizeof numbers, "total %.3f s\n", total);
  return out + numbers;
}

void OpProfile::print() const { std::fputs(table().c_str(), stderr); }

}  // namespace ic
