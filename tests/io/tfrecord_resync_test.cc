// TfRecordReader::resync and count_tfrecords over the three kinds of damage in the middle of a
// file: a flipped length (its CRC no longer verifies), a record cut short, and a length field
// claiming gigabytes with a valid CRC.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/damaged_tfrecord_test_util.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

using testing::clean_tfrecord_bytes;
using testing::Damage;
using testing::flip_length;
using testing::kDamaged;
using testing::kDamagedAt;
using testing::kDamages;
using testing::kFramedBytes;
using testing::kRecords;
using testing::record_text;
using TfRecordResyncTest = testing::DamagedFileTest;

TEST_F(TfRecordResyncTest, ReadsEveryRecordAfterEachKindOfDamage) {
  for (const Damage& damage : kDamages) {
    SCOPED_TRACE(damage.name);
    const std::string p = write("damaged", damage.apply(clean_tfrecord_bytes()));
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
  const std::string p = write("damaged", flip_length(clean_tfrecord_bytes()));
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
  const std::string bytes = clean_tfrecord_bytes().substr(0, kDamagedAt + 12 + 10);
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
  std::string bytes = clean_tfrecord_bytes();
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
  EXPECT_EQ(count_tfrecords(write("clean", clean_tfrecord_bytes()))->records, kRecords);
  EXPECT_EQ(count_tfrecords(write("clean2", clean_tfrecord_bytes()), 3)->records, 3);
  for (const Damage& damage : kDamages) {
    SCOPED_TRACE(damage.name);
    Result<TfRecordCount> count =
        count_tfrecords(write("damaged", damage.apply(clean_tfrecord_bytes())));
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(count->damaged_regions, 1);
    EXPECT_EQ(count->uncounted_bytes, damage.skipped);
    EXPECT_EQ(count->records, kRecords - 1);
  }
  std::string bad_data = clean_tfrecord_bytes();
  bad_data[kDamagedAt + 20] ^= 0x01;  // the framing is intact: the record is still held
  Result<TfRecordCount> count = count_tfrecords(write("bad-data", bad_data));
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->records, kRecords);
  EXPECT_EQ(count->damaged_regions, 0);
}

}  // namespace
}  // namespace ic
