#include "runtime/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ic {
namespace {

constexpr int64_t kClasses = 8;

TEST(TopK, TiesMaskedRowsAndNonFiniteLogits) {
  const float nan = std::nanf("");
  // clang-format off
  const std::vector<float> logits = {
      0, 1, 2, 9, 4, 5, 6, 7,  // row 0: clear winner at class 3
      1, 5, 5, 3, 0, 0, 0, 0,  // row 1: classes 1 and 2 tie for the max; argmax takes class 1
      1, 5, 5, 3, 0, 0, 0, 0,  // row 2: same scores as row 1
      9, 8, 7, 6, 5, 5, 5, 0,  // row 3: 9 8 7 6, then a three-way tie at 5 for 5th place
      9, 8, 7, 6, 5, 5, 5, 0,  // row 4: same as row 3
      9, 9, 9, 9, 9, 9, 9, 9,  // row 5: padding (label -1): never counted
      0, 1, nan, 0, 0, 0, 0, 0,  // row 6: a NaN in the row: in_top_k says no
      0, 0, 0, 0, 0, 0, 0, 1,  // row 7: label out of range
  };
  // clang-format on
  const std::vector<int32_t> labels = {3, 2, 1, 6, 7, -1, 1, 9};
  TopKCounts c;
  accumulate_topk(logits.data(), labels.data(), 8, kClasses, &c);
  // row 0: top1 + top5.  row 1: not top1 (argmax is class 1), top5.  row 2: top1 + top5.
  // row 3: label 6 ties the 5th with 4 strictly higher: top5.  row 4: 7 classes higher: neither.
  // row 6: the NaN makes top5 false; argmax never prefers a NaN, so class 1 wins: top1.
  // row 7: label 9 out of range: neither.
  EXPECT_EQ(c.count, 7);
  EXPECT_EQ(c.top1, 3);
  EXPECT_EQ(c.top5, 4);
  EXPECT_DOUBLE_EQ(c.accuracy(), 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(c.accuracy_at_5(), 4.0 / 7.0);
}

// Brute force: sort-free count of strictly larger logits, against random rows with many ties.
TEST(TopK, AgreesWithDefinitionOnRandomTiedRows) {
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  std::vector<float> logits(64 * kClasses);
  std::vector<int32_t> labels(64);
  for (float& x : logits) x = static_cast<float>((next() >> 16) % 4);  // values 0..3: lots of ties
  for (int32_t& l : labels) l = static_cast<int32_t>((next() >> 16) % kClasses);
  int64_t want1 = 0, want5 = 0;
  for (int b = 0; b < 64; ++b) {
    const float* row = &logits[static_cast<size_t>(b * kClasses)];
    int first_max = 0, higher = 0;
    for (int c = 0; c < kClasses; ++c) {
      if (row[c] > row[first_max]) first_max = c;
      if (row[c] > row[labels[static_cast<size_t>(b)]]) ++higher;
    }
    want1 += first_max == labels[static_cast<size_t>(b)];
    want5 += higher < 5;
  }
  TopKCounts c;
  accumulate_topk(logits.data(), labels.data(), 64, kClasses, &c);
  EXPECT_EQ(c.top1, want1);
  EXPECT_EQ(c.top5, want5);
  EXPECT_EQ(c.count, 64);
}

TEST(TopK, MergeAndMeanLoss) {
  TopKCounts a, b;
  a.top1 = 1, a.top5 = 2, a.count = 4;
  b.top1 = 3, b.top5 = 3, b.count = 4;
  add_batch_loss(2.0, &a);
  add_batch_loss(4.0, &b);
  add_batch_loss(6.0, &b);
  a.merge(b);
  EXPECT_EQ(a.top1, 4);
  EXPECT_EQ(a.top5, 5);
  EXPECT_EQ(a.count, 8);
  EXPECT_DOUBLE_EQ(a.mean_loss(), 4.0);
  EXPECT_DOUBLE_EQ(TopKCounts().accuracy(), 0.0);
}

}  // namespace
}  // namespace ic
