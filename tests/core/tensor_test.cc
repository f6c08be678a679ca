#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/status.h"

namespace ic {
namespace {

TEST(Shape, NumelAndString) {
  const Shape s{2, 3, 4, 5};
  EXPECT_EQ(s.numel(), 120);
  EXPECT_EQ(s.str(), "[2,3,4,5]");
  EXPECT_EQ(Shape{}.numel(), 1);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  // 1 + 2^-8 lies exactly between two bf16 values: ties go to the even mantissa (1.0).
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))),
            1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

Result<int> half_of(int x) {
  if (x % 2) return error("odd value ", x);
  return x / 2;
}

Status quarter(int x, int* out) {
  IC_ASSIGN_OR_RETURN(const int half, half_of(x));
  IC_ASSIGN_OR_RETURN(*out, half_of(half));
  return Status();
}

TEST(Status, PropagatesErrors) {
  int out = 0;
  EXPECT_TRUE(quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  const Status s = quarter(6, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "odd value 3");
  EXPECT_EQ(s.with_context("step 1").message(), "step 1: odd value 3");
}

}  // namespace
}  // namespace ic
