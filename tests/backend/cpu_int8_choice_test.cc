// The rule that keeps a timed int8 convolution in int8 (backend/cpu/int8_choice.h), held to
// numbers: the timings themselves depend on the machine, the rule must not.
#include <gtest/gtest.h>

#include "backend/cpu/int8_choice.h"

namespace ic::cpu {
namespace {

// Illustrative figures from a 2-core AMD Zen 2 at batch 8: Conv2d_4a_3x3, 55.5 ms in int8
// against 27.8 ms by float32 Winograd, leaves; a 1x1 layer 10-35% faster in int8 stays.
TEST(Int8Choice, Float32MustWinByTenPercentAndTenMicroseconds) {
  EXPECT_FALSE(keeps_int8(55.5e-3, 27.8e-3)) << "float32 twice as fast";
  EXPECT_TRUE(keeps_int8(0.8e-3, 1.0e-3)) << "int8 faster";
  EXPECT_TRUE(keeps_int8(1.0e-3, 1.0e-3)) << "a tie stays int8";
  EXPECT_TRUE(keeps_int8(1.05e-3, 1.0e-3)) << "float32 5% faster: within the noise";
  EXPECT_FALSE(keeps_int8(1.2e-3, 1.0e-3)) << "float32 17% faster";
  EXPECT_FALSE(keeps_int8(20e-6, 5e-6)) << "4x faster by 15 microseconds: leaves";
  EXPECT_TRUE(keeps_int8(8e-6, 2e-6)) << "4x faster but 6 microseconds: a tie";
}

}  // namespace
}  // namespace ic::cpu
