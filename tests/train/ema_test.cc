#include "train/ema.h"

#include <gtest/gtest.h>

#include <vector>

namespace ic {
namespace {

TEST(EmaDecay, WarmsUpThenCapsAtDecay) {
  // min(0.995, (1 + n) / (10 + n)).
  EXPECT_FLOAT_EQ(ema_decay(0.995f, 0), 0.1f);
  EXPECT_FLOAT_EQ(ema_decay(0.995f, 1), 2.0f / 11.0f);
  EXPECT_FLOAT_EQ(ema_decay(0.995f, 90), 0.91f);
  EXPECT_FLOAT_EQ(ema_decay(0.995f, 1000), 1001.0f / 1010.0f);  // 0.99109 < 0.995
  EXPECT_EQ(ema_decay(0.995f, 1791), 0.995f);                   // 1792/1801 = 0.99500 ≥ cap
  EXPECT_EQ(ema_decay(0.995f, 250000), 0.995f);
  EXPECT_EQ(ema_decay(0.5f, 0), 0.1f);
  EXPECT_EQ(ema_decay(0.05f, 0), 0.05f);
}

TEST(EmaUpdate, MatchesAssignMovingAverage) {
  std::vector<float> shadow = {1.0f, 2.0f, -4.0f};
  const std::vector<float> value = {0.0f, 2.0f, 4.0f};
  ema_update_host(shadow.data(), value.data(), shadow.size(), 0.9f);
  // shadow - (1 - 0.9) * (shadow - value) = 0.9 * shadow + 0.1 * value.
  EXPECT_FLOAT_EQ(shadow[0], 0.9f);
  EXPECT_FLOAT_EQ(shadow[1], 2.0f);
  EXPECT_FLOAT_EQ(shadow[2], -3.2f);
}

}  // namespace
}  // namespace ic
