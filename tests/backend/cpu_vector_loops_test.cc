// The bf16 loops of backend/cpu/vector_loops.h bit for bit against float arithmetic rounded by
// float_to_bf16, on every count from 0 to 100 (whole vectors of 32 and the tails after them)
// and on values that test the rounding: ties, NaNs, infinities, subnormals. Where the CPU has
// AVX-512 this checks the vector loops against the element-by-element definition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/vector_loops.h"
#include "core/tensor.h"

namespace ic::cpu {
namespace {

// bf16 values of every kind: random normal ones, exact halves of an ulp after arithmetic, and
// the special ones.
std::vector<uint16_t> test_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uniform(-8.f, 8.f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            1e-39f,  // subnormal
                            0.f,
                            -0.f,
                            3e38f};
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float_to_bf16(i % 13 == 5 ? specials[(i / 13) % 7] : uniform(gen));
  return v;
}

// Equal bits, or both NaN (the payload is not specified).
void expect_same(uint16_t got, uint16_t want, const char* what, size_t count, size_t i) {
  if (std::isnan(bf16_to_float(want))) {
    EXPECT_TRUE(std::isnan(bf16_to_float(got))) << what << " count " << count << " at " << i;
  } else {
    EXPECT_EQ(got, want) << what << " count " << count << " at " << i << ": " << bf16_to_float(got)
                         << " against " << bf16_to_float(want);
  }
}

TEST(CpuVectorLoops, Bf16MultiplyAndAddRoundOnceAsFloatToBf16Does) {
  for (size_t count = 0; count <= 100; ++count) {
    const auto a = test_values(count, uint32_t(count)), b = test_values(count, uint32_t(count + 7));
    std::vector<uint16_t> product(count + 1, 0x1234), sum(count + 1, 0x1234),
        relu(count + 1, 0x1234);
    multiply_bf16(a.data(), b.data(), product.data(), int64_t(count));
    add_bf16(a.data(), b.data(), sum.data(), int64_t(count), -INFINITY);
    add_bf16(a.data(), b.data(), relu.data(), int64_t(count), 0.f);
    for (size_t i = 0; i < count; ++i) {
      const float x = bf16_to_float(a[i]), y = bf16_to_float(b[i]);
      expect_same(product[i], float_to_bf16(x * y), "multiply", count, i);
      expect_same(sum[i], float_to_bf16(x + y), "add", count, i);
      const float s = x + y;
      expect_same(relu[i], float_to_bf16(s < 0.f ? 0.f : s), "add+relu", count, i);
    }
    EXPECT_EQ(product[count], 0x1234) << "wrote past the end, count " << count;
    EXPECT_EQ(sum[count], 0x1234) << "wrote past the end, count " << count;
  }
}

TEST(CpuVectorLoops, Bf16RowSumsAddEachRowInOrder) {
  for (int64_t count : {1, 16, 31, 32, 33, 64, 70}) {
    const int64_t rows = 9, stride = count + 3;
    const auto x = test_values(size_t(rows * stride), uint32_t(count));
    std::vector<float> sum(size_t(count), 0.5f), want(size_t(count), 0.5f);
    sum_rows_bf16(x.data(), rows, stride, sum.data(), count);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < count; ++i)
        want[size_t(i)] += bf16_to_float(x[size_t(r * stride + i)]);
    for (int64_t i = 0; i < count; ++i) {
      if (std::isnan(want[size_t(i)])) {
        EXPECT_TRUE(std::isnan(sum[size_t(i)])) << "count " << count << " at " << i;
      } else {
        EXPECT_EQ(sum[size_t(i)], want[size_t(i)]) << "count " << count << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace ic::cpu
