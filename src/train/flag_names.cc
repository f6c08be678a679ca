#include "train/flag_names.h"

#include <algorithm>

namespace ic {
namespace {

// Levenshtein distance, one row at a time.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_flag_name(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_distance = 0;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (best == nullptr || d < best_distance) {
      best = &candidate;
      best_distance = d;
    }
  }
  const size_t tolerance = std::max<size_t>(2, name.size() / 4);
  return best != nullptr && best_distance <= tolerance ? *best : "";
}

}  // namespace ic
