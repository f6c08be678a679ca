// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TensorFlow's crc32c::Value.
// Two implementations give the same bits: the SSE4.2 crc32 instruction (8 bytes per step),
// chosen at run time when the CPU has it, and a portable slicing-by-8 table version.
#include <array>
#include <cstdint>
#include <cstring>

#include "io/tfrecord.h"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define IC_CRC32C_HAVE_X86 1
#endif

namespace ic {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli polynomial
constexpr uint32_t kMaskDelta = 0xa282ead8u;

// kTables[k][b]: the CRC of byte b followed by k zero bytes, for slicing-by-8.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables make_tables() {
  CrcTables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ ((c & 1u) ? kPolynomial : 0u);
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  }
  return t;
}

constexpr CrcTables kTables = make_tables();

// `crc` here is the running register (already inverted), not the final value.
uint32_t extend_portable(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian hosts only; every target we build for is
    crc = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
          kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
          kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xffu];
  return crc;
}

#ifdef IC_CRC32C_HAVE_X86
__attribute__((target("sse4.2"))) uint32_t extend_sse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool cpu_has_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t reg = ~crc;
#ifdef IC_CRC32C_HAVE_X86
  if (cpu_has_sse42()) return ~extend_sse42(reg, p, size);
#endif
  return ~extend_portable(reg, p, size);
}

uint32_t crc32c(const void* data, size_t size) { return crc32c_extend(0, data, size); }

uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

uint32_t unmask_crc32c(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

uint32_t crc32c_portable(const void* data, size_t size) {
  return ~extend_portable(~0u, static_cast<const uint8_t*>(data), size);
}

}  // namespace ic
