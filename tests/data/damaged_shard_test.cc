// The record stream over a shard damaged in the middle (a flipped length, a record cut short, a
// length claiming gigabytes): reading goes on at the next valid record, names the file, the
// offset and the bytes skipped, counts the records lost, and stays exactly resumable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/record_stream.h"
#include "io/damaged_tfrecord_test_util.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

using testing::clean_tfrecord_bytes;
using testing::cut_record;
using testing::Damage;
using testing::flip_length;
using testing::huge_length;
using testing::kDamaged;
using testing::kDamagedAt;
using testing::kDamages;
using testing::kRecords;
using testing::record_text;
using DamagedShardTest = testing::DamagedFileTest;

std::vector<std::string> read_through(RecordStream* stream) {
  std::vector<std::string> out;
  std::string record, source;
  while (true) {
    Result<bool> more = stream->next(&record, &source);
    EXPECT_TRUE(more.ok()) << more.status().message();
    if (!more.ok() || !*more) return out;
    out.push_back(record);
  }
}

TEST_F(DamagedShardTest, ReadsTheRecordsAfterTheDamageAndNamesFileOffsetAndBytes) {
  for (const Damage& damage : kDamages) {
    SCOPED_TRACE(damage.name);
    const std::string path = write("train-00000-of-00001", damage.apply(clean_tfrecord_bytes()));
    RecordStream stream({path}, RecordStreamOptions{});
    const std::vector<std::string> got = read_through(&stream);
    ASSERT_EQ(got.size(), size_t{kRecords - 1});
    EXPECT_EQ(got.back(), record_text(kRecords - 1));
    EXPECT_EQ(stream.corrupt_records(), 1);
    EXPECT_EQ(stream.bytes_skipped(), damage.skipped);
    ASSERT_EQ(stream.damage_notes().size(), 1u);
    const std::string& note = stream.damage_notes()[0];
    EXPECT_EQ(note.rfind(path + ": corrupt record at byte " + std::to_string(kDamagedAt), 0), 0u)
        << note;
    EXPECT_NE(note.find("skipped " + std::to_string(damage.skipped) +
                        " bytes to the next valid record at byte " +
                        std::to_string(kDamagedAt + damage.skipped)),
              std::string::npos)
        << note;
  }
}

TEST_F(DamagedShardTest, WithoutSkippingTheDamageIsAnErrorNamingFileAndOffset) {
  const std::string path = write("validation-00000-of-00001", flip_length(clean_tfrecord_bytes()));
  RecordStreamOptions options;
  options.skip_corrupt_records = false;
  RecordStream stream({path}, options);
  std::string record, source;
  for (int i = 0; i < kDamaged; ++i) ASSERT_TRUE(*stream.next(&record, &source));
  Result<bool> bad = stream.next(&record, &source);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::data_loss);
  EXPECT_EQ(bad.status().message(), path + ": corrupt record at byte " +
                                        std::to_string(kDamagedAt) + ": length CRC mismatch");
}

TEST_F(DamagedShardTest, AnUnreadableRemainderCountsTheRecordsItHeld) {
  std::string bytes = clean_tfrecord_bytes();
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(kDamagedAt), bytes.end(), '\0');
  const std::string path = write("train-00000-of-00001", bytes);
  RecordStream stream({path}, RecordStreamOptions{});
  EXPECT_EQ(read_through(&stream).size(), size_t{kDamaged});
  EXPECT_EQ(stream.corrupt_records(), kRecords - kDamaged);  // bytes lost / mean record size
  ASSERT_EQ(stream.damage_notes().size(), 1u);
  EXPECT_NE(stream.damage_notes()[0].find("to the end of the file (about 6 records)"),
            std::string::npos)
      << stream.damage_notes()[0];
}

TEST_F(DamagedShardTest, APositionTakenAfterTheDamageResumesExactly) {
  const std::vector<std::string> files = {
      write("train-00000-of-00002", cut_record(clean_tfrecord_bytes())),
      write("train-00001-of-00002", huge_length(clean_tfrecord_bytes()))};
  RecordStreamOptions options;
  options.repeat_and_shuffle_files = true;
  options.cycle_length = 2;
  options.shuffle_buffer = 5;
  options.seed = 7;
  for (int taken_at : {3, 9, 12, 17}) {
    SCOPED_TRACE(taken_at);
    RecordStream first(files, options);
    std::string record, source;
    for (int i = 0; i < taken_at; ++i) ASSERT_TRUE(*first.next(&record, &source));
    const RecordStreamPosition position = first.position();
    RecordStream resumed(files, options);
    ASSERT_TRUE(resumed.restore(position).ok());
    for (int i = 0; i < 30; ++i) {
      std::string a, b, a_source, b_source;
      uint64_t a_offset = 0, b_offset = 0;
      ASSERT_TRUE(*first.next(&a, &a_source, &a_offset));
      ASSERT_TRUE(*resumed.next(&b, &b_source, &b_offset));
      EXPECT_EQ(a, b);
      EXPECT_EQ(a_source, b_source);
      EXPECT_EQ(a_offset, b_offset);
    }
  }
}

}  // namespace
}  // namespace ic
