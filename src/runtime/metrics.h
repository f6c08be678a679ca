// Eval metrics as the reference's metric_fn: accuracy = tf.metrics.accuracy(labels,
// argmax(logits)) and accuracy@5 = mean(tf.nn.in_top_k(logits, labels, 5)); loss is the mean
// of the per-batch losses (Estimator's tf.metrics.mean(loss)).
#pragma once

#include <cstdint>

namespace ic {

struct TopKCounts {
  int64_t top1 = 0, top5 = 0, count = 0;
  double loss_sum = 0;  // sum of per-batch mean losses, see add_batch_loss
  int64_t loss_batches = 0;

  void merge(const TopKCounts& other);  // sums counts (shards, ranks)
  double accuracy() const;              // top1 / count (0 when empty)
  double accuracy_at_5() const;         // top5 / count
  double mean_loss() const;             // loss_sum / loss_batches
};

// logits: host [batch, num_classes] row-major; labels: [batch]. Rows with label < 0 are padding
// and skipped. Top-1: argmax takes the first of tied maxima (tf.argmax). Top-5: tf.nn.in_top_k —
// the target is in if fewer than 5 classes score strictly higher (a tie with the 5th counts),
// and never when the label is out of range or any logit of the row is not finite.
void accumulate_topk(const float* logits, const int32_t* labels, int64_t batch, int64_t num_classes,
                     TopKCounts* counts);

// Adds one batch's mean loss.
void add_batch_loss(double batch_mean_loss, TopKCounts* counts);

}  // namespace ic
