#include "graph/op_profile.h"

#include <algorithm>
#include <cstdio>

namespace ic {

void OpProfile::record(const char* op, bool backward, double seconds) {
  // A handful of op kinds: a linear search is cheaper than hashing the name.
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.op == op; });
  if (it == entries_.end()) {
    entries_.push_back(Entry{op});
    it = entries_.end() - 1;
  }
  if (backward) {
    it->backward_seconds += seconds;
    ++it->backward_calls;
  } else {
    it->forward_seconds += seconds;
    ++it->forward_calls;
  }
}

std::string OpProfile::table() const {
  std::vector<Entry> sorted = entries_;
  std::sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    return a.forward_seconds + a.backward_seconds > b.forward_seconds + b.backward_seconds;
  });
  double total = 0;
  for (const Entry& e : sorted) total += e.forward_seconds + e.backward_seconds;
  std::string out = "op                       forward s  calls   backward s  calls   share\n";
  char line[160];
  for (const Entry& e : sorted) {
    const double share = total > 0 ? 100.0 * (e.forward_seconds + e.backward_seconds) / total : 0;
    std::snprintf(line, sizeof line, "%-22s %11.3f %6ld %12.3f %6ld %6.1f%%\n", e.op.c_str(),
                  e.forward_seconds, e.forward_calls, e.backward_seconds, e.backward_calls, share);
    out += line;
  }
  std::snprintf(line, sizeof line, "total %.3f s\n", total);
  return out + line;
}

void OpProfile::print() const { std::fputs(table().c_str(), stderr); }

}  // namespace ic
