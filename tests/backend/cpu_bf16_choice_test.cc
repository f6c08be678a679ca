// The rule that keeps a timed bf16 convolution in bf16 (backend/cpu/bf16_choice.h), held to
// numbers: the timings themselves depend on the machine, the rule must not.
#include <gtest/gtest.h>

#include "backend/cpu/bf16_choice.h"

namespace ic::cpu {
namespace {

// Without AMX most layers are float32: bf16 must clearly win to stay.
TEST(Bf16Choice, WithoutAmxBf16MustWinByTenPercentAndTenMicroseconds) {
  EXPECT_TRUE(keeps_bf16(0.5e-3, 1.0e-3, 0, false));
  EXPECT_FALSE(keeps_bf16(0.95e-3, 1.0e-3, 0, false)) << "5% faster is a tie: float32 stays";
  EXPECT_FALSE(keeps_bf16(1.2e-3, 1.0e-3, 0, false)) << "slower";
  EXPECT_FALSE(keeps_bf16(2e-6, 8e-6, 0, false)) << "4x faster but 6 microseconds: a tie";
  EXPECT_TRUE(keeps_bf16(2e-6, 14e-6, 0, false));
}

// With AMX most layers are bf16: a layer leaves for float32 only when float32 with the casts it
// adds (its island's) clearly wins. Illustrative figures: a depthwise layer as MobileNet v2's
// were under oneDNN (float32 alone a little faster than bf16, the casts longer than either), and
// an expanding 1x1 convolution as EfficientNet-B0's from 24 channels (bf16 10-20% slower than
// float32 alone, the casts tipping it).
TEST(Bf16Choice, WithAmxFloat32MustWinWithItsCasts) {
  EXPECT_TRUE(keeps_bf16(1.1e-3, 1.0e-3, 2.0e-3, true)) << "the casts count";
  EXPECT_TRUE(keeps_bf16(336e-6, 278e-6, 95e-6, true)) << "float32 with casts is slower";
  EXPECT_TRUE(keeps_bf16(304e-6, 245e-6, 30e-6, true)) << "float32 with casts 9.5% faster: a tie";
  EXPECT_FALSE(keeps_bf16(2.0e-3, 1.0e-3, 0.1e-3, true)) << "casts too cheap to pay for bf16";
  EXPECT_TRUE(keeps_bf16(8e-6, 2e-6, 0.5e-6, true)) << "4x faster but 5.5 microseconds: a tie";
  EXPECT_FALSE(keeps_bf16(30e-6, 3e-6, 1e-6, true));
}

TEST(Bf16Choice, ClearlyFasterMeansTenPercentAndTenMicroseconds) {
  EXPECT_TRUE(clearly_faster(0.89e-3, 1e-3));
  EXPECT_FALSE(clearly_faster(0.91e-3, 1e-3));
  EXPECT_FALSE(clearly_faster(1e-6, 10.5e-6));
  EXPECT_TRUE(clearly_faster(1e-6, 11.5e-6));
}

}  // namespace
}  // namespace ic::cpu
