// The rule that keeps a timed bf16 convolution in bf16 (backend/cpu/bf16_choice.h), held to
// numbers: the timings themselves depend on the machine, the rule must not.
#include <gtest/gtest.h>

#include "backend/cpu/bf16_choice.h"

namespace ic::cpu {
namespace {

TEST(Bf16Choice, Bf16MustWinByTenPercentAndTenMicroseconds) {
  EXPECT_TRUE(keeps_bf16(0.5e-3, 1.0e-3, 0));
  EXPECT_FALSE(keeps_bf16(0.95e-3, 1.0e-3, 0)) << "5% faster is a tie: float32 stays";
  EXPECT_FALSE(keeps_bf16(1.2e-3, 1.0e-3, 0)) << "slower";
  EXPECT_FALSE(keeps_bf16(2e-6, 8e-6, 0)) << "4x faster but 6 microseconds: a tie";
  EXPECT_TRUE(keeps_bf16(2e-6, 14e-6, 0));
}

// A depthwise layer between bf16 neighbours on an AMX CPU, as MobileNet v2's are (illustrative
// figures: its float32 form a little faster than its bf16 one, the casts of its input and its
// output longer than either): float32 alone would win, float32 with the casts it adds does not.
TEST(Bf16Choice, TheCastsOfAFloat32IslandCount) {
  const double bf16 = 1.1e-3, f32 = 1.0e-3, casts = 2.0e-3;
  EXPECT_FALSE(keeps_bf16(bf16, f32, 0));
  EXPECT_TRUE(keeps_bf16(bf16, f32, casts));
  EXPECT_FALSE(keeps_bf16(2.0e-3, 1.0e-3, 0.1e-3)) << "casts too cheap to pay for bf16";
}

}  // namespace
}  // namespace ic::cpu
