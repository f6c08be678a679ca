// A TFRecord file of ten 100-byte records, and the three ways the tests damage its fifth
// record's framing in the middle of the file: a flipped length (its CRC no longer verifies), a
// record cut short, and a length claiming gigabytes with a valid CRC. Shared by the reader's
// resync tests (io) and the record stream's damaged-shard tests (data).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "core/temp_dir_test_util.h"
#include "io/tfrecord.h"

namespace ic::testing {

inline constexpr int kRecords = 10;
inline constexpr size_t kRecordBytes = 100;
inline constexpr size_t kFramedBytes = kRecordBytes + 16;  // length, its CRC, data, data CRC
inline constexpr int kDamaged = 4;                         // the record whose framing is damaged
inline constexpr uint64_t kDamagedAt = kDamaged * kFramedBytes;

inline std::string record_text(int i) {
  return std::string(kRecordBytes, static_cast<char>('a' + i));
}

inline std::string clean_tfrecord_bytes() {
  std::string bytes;
  for (int i = 0; i < kRecords; ++i) bytes += frame_tfrecord(record_text(i));
  return bytes;
}

inline std::string flip_length(std::string bytes) {
  bytes[kDamagedAt] ^= 0x01;
  return bytes;
}

// Half of the damaged record's data is gone: its header claims bytes that belong to the next.
inline std::string cut_record(std::string bytes) {
  return bytes.erase(kDamagedAt + 12 + kRecordBytes / 2, kRecordBytes / 2);
}

// 2^33 bytes, with the length CRC recomputed so that only the size gives it away.
inline std::string huge_length(std::string bytes) {
  for (int i = 0; i < 8; ++i) bytes[kDamagedAt + i] = i == 4 ? 0x02 : 0;
  const uint32_t crc = mask_crc32c(crc32c(bytes.data() + kDamagedAt, 8));
  for (int i = 0; i < 4; ++i)
    bytes[kDamagedAt + 8 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  return bytes;
}

struct Damage {
  const char* name;
  std::string (*apply)(std::string);
  uint64_t skipped;  // bytes from the damaged record's start to the next valid record
};

inline const Damage kDamages[] = {
    {"flipped length", flip_length, kFramedBytes},
    {"cut record", cut_record, kFramedBytes - kRecordBytes / 2},
    {"huge length", huge_length, kFramedBytes},
};

// A fresh directory per test (core/temp_dir_test_util.h), removed after it.
class DamagedFileTest : public ::testing::Test {
 protected:
  // Writes `bytes` to the file `name` of the test's directory; returns its path.
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = dir_.sub(name);
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  TempDir dir_{"damaged_tfrecord_"};
};

}  // namespace ic::testing
