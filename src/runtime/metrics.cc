#include "runtime/metrics.h"

#include <cmath>

namespace ic {

void TopKCounts::merge(const TopKCounts& other) {
  top1 += other.top1;
  top5 += other.top5;
  count += other.count;
  loss_sum += other.loss_sum;
  loss_batches += other.loss_batches;
}

double TopKCounts::accuracy() const {
  return count ? static_cast<double>(top1) / static_cast<double>(count) : 0.0;
}
double TopKCounts::accuracy_at_5() const {
  return count ? static_cast<double>(top5) / static_cast<double>(count) : 0.0;
}
double TopKCounts::mean_loss() const {
  return loss_batches ? loss_sum / static_cast<double>(loss_batches) : 0.0;
}

void accumulate_topk(const float* logits, const int32_t* labels, int64_t batch, int64_t num_classes,
                     TopKCounts* counts) {
  constexpr int64_t k = 5;
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t label = labels[b];
    if (label < 0) continue;  // padding row
    ++counts->count;
    const float* row = logits + b * num_classes;

    // tf.argmax: the first index of the largest value.
    int64_t argmax = 0;
    for (int64_t c = 1; c < num_classes; ++c) {
      if (row[c] > row[argmax]) argmax = c;
    }
    if (argmax == label) ++counts->top1;

    // tf.nn.in_top_k: false for an out-of-range label or any non-finite logit.
    if (label >= num_classes || !std::isfinite(row[label])) continue;
    const float target = row[label];
    int64_t higher = 0;
    bool finite = true;
    for (int64_t c = 0; c < num_classes; ++c) {
      if (!std::isfinite(row[c])) {
        finite = false;
        break;
      }
      if (row[c] > target) ++higher;
    }
    if (finite && higher < k) ++counts->top5;
  }
}

void add_batch_loss(double batch_mean_loss, TopKCounts* counts) {
  counts->loss_sum += batch_mean_loss;
  ++counts->loss_batches;
}

}  // namespace ic
