#include "train/sweep_halving.h"

#include <algorithm>
#include <numeric>

namespace ic {

std::vector<int64_t> halving_rungs(size_t variants, int eta, int64_t train_steps,
                                   int64_t first_rung_steps) {
  std::vector<int64_t> rungs;
  if (first_rung_steps > 0) {
    for (int64_t s = first_rung_steps; s < train_steps; s *= eta) rungs.push_back(s);
    rungs.push_back(train_steps);
    return rungs;
  }
  int halvings = 0;
  for (size_t left = variants; left > 1; left = halving_keep(left, eta)) ++halvings;
  for (int r = halvings; r >= 0; --r) {
    int64_t s = train_steps;
    for (int i = 0; i < r; ++i) s /= eta;
    s = std::max<int64_t>(s, 1);
    if (rungs.empty() || s > rungs.back()) rungs.push_back(s);
  }
  return rungs;
}

size_t halving_keep(size_t entering, int eta) {
  const auto e = static_cast<size_t>(std::max(eta, 2));
  return std::max<size_t>(1, (entering + e - 1) / e);
}

std::vector<size_t> halving_survivors(const std::vector<std::optional<double>>& scores,
                                      ExportBestMode mode, size_t keep) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto better = [&](size_t a, size_t b) {
    if (!scores[b]) return scores[a].has_value();
    if (!scores[a]) return false;
    return mode == ExportBestMode::min ? *scores[a] < *scores[b] : *scores[a] > *scores[b];
  };
  std::stable_sort(order.begin(), order.end(), better);
  order.resize(std::min(keep, order.size()));
  return order;
}

}  // namespace ic
