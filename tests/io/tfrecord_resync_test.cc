// TfRecordReader::resync and count_tfrecords over the three kinds of damage in the middle of a
// file: a flipped length (its CRC no longer verifies), a record cut short, and a length field
// claiming gigabytes with a valid CRC.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/tfrecord.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

constexpr int kRecords = 10;
constexpr size_t kRecordBytes = 100;
constexpr size_t kFramedBytes = kRecordBytes + 16;
constexpr int kDamaged = 4;  // the record whose framing is damaged
constexpr uint64_t kDamagedAt = kDamaged * kFramedBytes;

std::string record_text(int i) { return std::string(kRecordBytes, static_cast<char>('a' + i)); }

std::string clean_file_bytes() {
  std::string bytes;
  for (int i = 0; i < kRecords; ++i) bytes += frame_tfrecord(record_text(i));
  return bytes;
}

void put_u32(std::string* bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}

struct Damage {
  const char* name;
  std::string (*apply)(std::string);
  uint64_t skipped;  // bytes from the damaged record's start to the next valid record
};

std::string flip_length(std::string bytes) {
  bytes[kDamagedAt] ^= 0x01;
  return bytes;
}
std::string cut_record(std::string bytes) {
  // Half of the damaged record's data is gone: its header claims bytes that belong to the next.
  return bytes.erase(kDamagedAt + 12 + kRecordBytes / 2, kRecordBytes / 2);
}
std::string huge_length(std::string bytes) {
  // 2^33 bytes, with the length CRC recomputed so that only the size gives it away.
  for (int i = 0; i < 8; ++i) bytes[kDamagedAt + i] = i == 4 ? 0x02 : 0;
  put_u32(&bytes, kDamagedAt + 8, mask_crc32c(crc32c(bytes.data() + kDamagedAt, 8)));
  return bytes;
}

const Damage kDamages[] = {
    {"flipped length", flip_length, kFramedBytes},
    {"cut record", cut_record, kFramedBytes - kRecordBytes / 2},
    {"huge length", huge_length, kFramedBytes},
};

class TfRecordResyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ic_tfrecord_resync_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  fs::path dir_;
};

TEST_F(TfRecordResyncTest, ReadsEveryRecordAfterEachKindOfDamage) {
  for (const Damage& damage : kDamages) {
    SCOPED_TRACE(damage.name);
    const std::string p = write("damaged", damage.apply(clean_file_bytes()));
    Result<TfRecordReader> reader = TfRecordReader::open(p);
    ASSERT_TRUE(reader.ok());
    std::string record;
    std::vector<std::string> got;
    int errors = 0;
    while (true) {
      Result<bool> more = reader->read(&record);
      if (more.ok()) {
        if (!*more) break;
        got.push_back(record);
        continue;
      }
      ++errors;
      EXPECT_EQ(more.status().code(), StatusCode::data_loss);
      EXPECT_NE(more.status().message().find(p + ": corrupt record at byte " +
                                             std::to_string(kDamagedAt)),
                std::string::npos)
          << more.status().message();
      Result<TfRecordResync> resynced = reader->resync();
      ASSERT_TRUE(resynced.ok());
      EXPECT_TRUE(resynced->found);
      EXPECT_EQ(resynced->from, kDamagedAt);
      EXPECT_EQ(resynced->skipped_bytes(), damage.skipped);
      EXPECT_EQ(reader->offset(), resynced->to);
    }
    EXPECT_EQ(errors, 1);
    ASSERT_EQ(got.size(), size_t{kRecords - 1});
    for (int i = 0; i < kRecords - 1; ++i) {
      EXPECT_EQ(got[static_cast<size_t>(i)], record_text(i < kDamaged ? i : i + 1));
    }
  }
}

TEST_F(TfRecordResyncTest, ResyncIsReproducibleFromTheDamagedRecordsOffset) {
  const std::string p = write("damaged", flip_length(clean_file_bytes()));
  Result<TfRecordReader> reader = TfRecordReader::open(p);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(reader->seek(kDamagedAt).ok());
  std::string record;
  ASSERT_FALSE(reader->read(&record).ok());
  Result<TfRecordResync> first = reader->resync();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(reader->seek(kDamagedAt).ok());
  ASSERT_FALSE(reader->read(&record).ok());
  Result<TfRecordResync> again = reader->resync();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->to, again->to);
  EXPECT_EQ(first->to, kDamagedAt + kFramedBytes);
}

TEST_F(TfRecordResyncTest, DamageRunningToTheEndSkipsTheRest) {
  const std::string bytes = clean_file_bytes().substr(0, kDamagedAt + 12 + 10);
  const std::string p = write("cut-at-end", bytes);
  Result<TfRecordReader> reader = TfRecordReader::open(p);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(reader->seek(kDamagedAt).ok());
  std::string record;
  ASSERT_FALSE(reader->read(&record).ok());
  Result<TfRecordResync> resynced = reader->resync();
  ASSERT_TRUE(resynced.ok());
  EXPECT_FALSE(resynced->found);
  EXPECT_EQ(resynced->to, bytes.size());
  EXPECT_FALSE(*reader->read(&record));
}

TEST_F(TfRecordResyncTest, DataCrcDamageResyncsToTheNextRecord) {
  std::string bytes = clean_file_bytes();
  bytes[kDamagedAt + 12 + 3] ^= 0x20;
  const std::string p = write("bad-data", bytes);
  Result<TfRecordReader> reader = TfRecordReader::open(p);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(reader->seek(kDamagedAt).ok());
  std::string record;
  ASSERT_FALSE(reader->read(&record).ok());
  Result<TfRecordResync> resynced = reader->resync();
  ASSERT_TRUE(resynced.ok());
  EXPECT_EQ(resynced->to, kDamagedAt + kFramedBytes);
}

TEST_F(TfRecordResyncTest, CountFollowsTheFramingAndSaysWhatItCouldNotCount) {
  EXPECT_EQ(count_tfrecords(write("clean", clean_file_bytes()))->records, kRecords);
  EXPECT_EQ(count_tfrecords(write("clean2", clean_file_bytes()), 3)->records, 3);
  for (const Damage& damage : kDamages) {
    SCOPED_TRACE(damage.name);
    Result<TfRecordCount> count =
        count_tfrecords(write("damaged", damage.apply(clean_file_bytes())));
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(count->damaged_regions, 1);
    EXPECT_EQ(count->uncounted_bytes, damage.skipped);
    EXPECT_EQ(count->records, kRecords - 1);
  }
  std::string bad_data = clean_file_bytes();
  bad_data[kDamagedAt + 20] ^= 0x01;  // the framing is intact: the record is still held
  Result<TfRecordCount> count = count_tfrecords(write("bad-data", bad_data));
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->records, kRecords);
  EXPECT_EQ(count->damaged_regions, 0);
}

}  // namespace
}  // namespace ic
