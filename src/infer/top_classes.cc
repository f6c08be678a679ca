#include "infer/top_classes.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ic {

std::vector<std::pair<int64_t, float>> top_classes(const float* logits, int64_t classes, int k) {
  const int64_t top_k = std::min<int64_t>(k, classes);
  const float max = *std::max_element(logits, logits + classes);
  std::vector<double> prob(static_cast<size_t>(classes));
  double sum = 0;
  for (int64_t c = 0; c < classes; ++c) sum += prob[c] = std::exp(double{logits[c]} - max);
  std::vector<int64_t> order(static_cast<size_t>(classes));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<std::pair<int64_t, float>> top;
  top.reserve(static_cast<size_t>(top_k));
  for (int64_t j = 0; j < top_k; ++j) {
    top.emplace_back(order[j], static_cast<float>(prob[order[j]] / sum));
  }
  return top;
}

}  // namespace ic
