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

void OpProfile::record(const char* op, const std::string& node, const OpKernel& kernel,
                       bool backward, double seconds) {
  const bool by_layer = grouping_ == Grouping::layer;
  const std::string& name = by_layer ? node : std::string(op);
  auto [it, added] = index_.try_emplace(name, entries_.size());
  if (added) entries_.push_back(Entry{name, {}});
  Entry& e = entries_[it->second];
  // Read after the call: a kernel that chooses its implementation by timing has chosen by then.
  if (by_layer && e.implementation.empty()) {
    const std::string chosen = kernel.implementation();
    e.implementation = chosen.empty() ? std::string(op) : std::string(op) + ": " + chosen;
  }
  if (backward) {
    e.backward_seconds += seconds;
    ++e.backward_calls;
  } else {
    e.forward_seconds += seconds;
    ++e.forward_calls;
  }
}

std::string OpProfile::table() const {
  std::vector<Entry> sorted = entries_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    return a.forward_seconds + a.backward_seconds > b.forward_seconds + b.backward_seconds;
  });
  double total = 0;
  for (const Entry& e : sorted) total += e.forward_seconds + e.backward_seconds;
  const bool by_layer = grouping_ == Grouping::layer;
  std::string out = by_layer ? "node" : "op";
  out.resize(std::max<size_t>(out.size(), by_layer ? 48 : 22), ' ');
  out += "  forward s  calls   backward s  calls   share\n";
  char numbers[96];
  for (const Entry& e : sorted) {
    const double share = total > 0 ? 100.0 * (e.forward_seconds + e.backward_seconds) / total : 0;
    std::snprintf(numbers, sizeof numbers, " %10.4f %6ld %12.4f %6ld %6.1f%%", e.forward_seconds,
                  e.forward_calls, e.backward_seconds, e.backward_calls, share);
    std::string line = e.name;
    line.resize(std::max<size_t>(line.size(), by_layer ? 48 : 22), ' ');
    line += numbers;
    if (by_layer) line += "  " + e.implementation;
    out += line + "\n";
  }
  std::snprintf(numbers, sizeof numbers, "total %.3f s\n", total);
  return out + numbers;
}

void OpProfile::print() const { std::fputs(table().c_str(), stderr); }

}  // namespace ic
