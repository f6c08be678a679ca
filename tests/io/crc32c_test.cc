#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "io/tfrecord.h"

namespace ic {
namespace {

// Known vectors: RFC 3720 (iSCSI) appendix B.4 and TensorFlow's crc32c_test.cc.
TEST(Crc32c, KnownVectors) {
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c(digits.data(), digits.size()), 0xE3069283u);
  const std::vector<uint8_t> zeros(32, 0x00);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  const std::vector<uint8_t> ones(32, 0xFF);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::vector<uint8_t> ascending(32);
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  std::vector<uint8_t> descending(32);
  for (int i = 0; i < 32; ++i) descending[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c(descending.data(), descending.size()), 0x113FDB5Cu);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
}

TEST(Crc32c, PortableMatchesKnownVectors) {
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c_portable(digits.data(), digits.size()), 0xE3069283u);
  const std::vector<uint8_t> ones(32, 0xFF);
  EXPECT_EQ(crc32c_portable(ones.data(), ones.size()), 0x62A8AB43u);
}

// A bit-at-a-time reference, written from the definition, for random lengths and alignments.
uint32_t crc32c_bitwise(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int b = 0; b < 8; ++b) c = (c >> 1) ^ ((c & 1u) ? 0x82F63B78u : 0u);
  }
  return ~c;
}

TEST(Crc32c, FastPathsMatchBitwiseReference) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(1000);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t offset : {0, 1, 3, 7}) {
    for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 500, 993}) {
      const uint32_t want = crc32c_bitwise(data.data() + offset, n);
      EXPECT_EQ(crc32c(data.data() + offset, n), want) << offset << "+" << n;
      EXPECT_EQ(crc32c_portable(data.data() + offset, n), want) << offset << "+" << n;
    }
  }
}

TEST(Crc32c, ExtendEqualsWhole) {
  const std::string s = "hello world, this is a longer string for crc32c extension";
  for (size_t split = 0; split <= s.size(); ++split) {
    const uint32_t part = crc32c(s.data(), split);
    EXPECT_EQ(crc32c_extend(part, s.data() + split, s.size() - split), crc32c(s.data(), s.size()));
  }
}

TEST(Crc32c, MaskIsTensorFlows) {
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(mask_crc32c(c), ((c >> 15) | (c << 17)) + 0xa282ead8u);
  EXPECT_NE(mask_crc32c(c), c);
  EXPECT_EQ(unmask_crc32c(mask_crc32c(c)), c);
  EXPECT_EQ(unmask_crc32c(mask_crc32c(0)), 0u);
  EXPECT_EQ(unmask_crc32c(mask_crc32c(0xFFFFFFFFu)), 0xFFFFFFFFu);
}

}  // namespace
}  // namespace ic
