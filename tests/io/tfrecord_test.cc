#include "io/tfrecord.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ic {
namespace {

namespace fs = std::filesystem;

class TfRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ic_tfrecord_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static void write_bytes(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  static std::string read_bytes(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Writes `records` with our writer and returns the file's bytes.
  std::string write_records(const std::string& p, const std::vector<std::string>& records) {
    auto writer = TfRecordWriter::create(p);
    EXPECT_TRUE(writer.ok()) << writer.status().message();
    for (const auto& r : records) EXPECT_TRUE(writer->write(r).ok());
    EXPECT_TRUE(writer->close().ok());
    return read_bytes(p);
  }
  // Reads every record; returns the first error's message in *error_message.
  static std::vector<std::string> read_all(const std::string& p, std::string* error_message) {
    std::vector<std::string> out;
    auto reader = TfRecordReader::open(p);
    if (!reader.ok()) {
      *error_message = reader.status().message();
      return out;
    }
    std::string record;
    for (;;) {
      auto more = reader->read(&record);
      if (!more.ok()) {
        *error_message = more.status().message();
        return out;
      }
      if (!*more) return out;
      out.push_back(record);
    }
  }

  fs::path dir_;
};

// "123456789" then "" framed by hand from TensorFlow's format description (lengths as
// little-endian uint64, masked CRC32C values computed independently of this library).
const unsigned char kTwoRecords[] = {
    0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x37, 0xf9, 0x71, 0x39, 0x31,
    0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0xe5, 0xb0, 0x8a, 0xc7,  // record 0
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x29, 0x03, 0x98, 0x07, 0xd8,
    0xea, 0x82, 0xa2,  // record 1 (empty)
};

TEST_F(TfRecordTest, ReadsRecordBuiltFromTheSpec) {
  const std::string bytes(reinterpret_cast<const char*>(kTwoRecords), sizeof(kTwoRecords));
  write_bytes(path("spec"), bytes);
  std::string err;
  const auto records = read_all(path("spec"), &err);
  EXPECT_EQ(err, "");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0], "123456789");
  EXPECT_EQ(records[1], "");
}

TEST_F(TfRecordTest, WriterProducesTheSpecBytes) {
  const std::string bytes(reinterpret_cast<const char*>(kTwoRecords), sizeof(kTwoRecords));
  EXPECT_EQ(write_records(path("ours"), {"123456789", ""}), bytes);
  EXPECT_EQ(frame_tfrecord("123456789"), bytes.substr(0, 25));
}

TEST_F(TfRecordTest, RoundTrip) {
  std::vector<std::string> records;
  for (int i = 0; i < 50; ++i) {
    std::string r(static_cast<size_t>(i * 37 % 3001), '\0');
    for (size_t j = 0; j < r.size(); ++j) r[j] = static_cast<char>((j * 31 + i) & 0xff);
    records.push_back(r);
  }
  records.push_back(std::string(3 << 20, 'x'));  // larger than the 1 MiB stdio buffer
  const std::string bytes = write_records(path("rt"), records);
  size_t total = 0;
  for (const auto& r : records) total += r.size() + 16;
  EXPECT_EQ(bytes.size(), total);
  std::string err;
  EXPECT_EQ(read_all(path("rt"), &err), records);
  EXPECT_EQ(err, "");
}

TEST_F(TfRecordTest, EmptyFileHasNoRecords) {
  write_bytes(path("empty"), "");
  std::string err;
  EXPECT_TRUE(read_all(path("empty"), &err).empty());
  EXPECT_EQ(err, "");
}

TEST_F(TfRecordTest, MissingFileIsAnError) {
  auto reader = TfRecordReader::open(path("nope"));
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("nope"), std::string::npos);
}

TEST_F(TfRecordTest, DataCrcMismatchNamesFileAndOffsetAndCanBeSkipped) {
  std::string bytes = write_records(path("a"), {"first", "second", "third"});
  // Record 1 starts at 16 + 5 = 21; its data starts 12 bytes later.
  bytes[21 + 12 + 2] ^= 0x01;
  write_bytes(path("bad-data"), bytes);
  auto reader = TfRecordReader::open(path("bad-data"));
  ASSERT_TRUE(reader.ok());
  std::string record;
  ASSERT_TRUE(*reader->read(&record));
  EXPECT_EQ(record, "first");
  auto bad = reader->read(&record);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            path("bad-data") + ": corrupt record at byte 21: data CRC mismatch");
  EXPECT_EQ(reader->offset(), 21u);
  ASSERT_TRUE(reader->skip_corrupt());
  EXPECT_EQ(reader->offset(), 21u + 16 + 6);
  auto next = reader->read(&record);
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(*next);
  EXPECT_EQ(record, "third");
  EXPECT_FALSE(*reader->read(&record));
}

TEST_F(TfRecordTest, DataCrcFieldCorruptIsDataMismatch) {
  std::string bytes = write_records(path("a"), {"first"});
  bytes[bytes.size() - 1] ^= 0x80;
  write_bytes(path("bad-footer"), bytes);
  std::string err;
  EXPECT_TRUE(read_all(path("bad-footer"), &err).empty());
  EXPECT_NE(err.find("byte 0: data CRC mismatch"), std::string::npos) << err;
}

TEST_F(TfRecordTest, LengthCrcMismatchIsNotSkippable) {
  std::string bytes = write_records(path("a"), {"first", "second"});
  bytes[21] ^= 0x04;  // the length of record 1
  write_bytes(path("bad-len"), bytes);
  auto reader = TfRecordReader::open(path("bad-len"));
  ASSERT_TRUE(reader.ok());
  std::string record;
  ASSERT_TRUE(*reader->read(&record));
  auto bad = reader->read(&record);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            path("bad-len") + ": corrupt record at byte 21: length CRC mismatch");
  EXPECT_FALSE(reader->skip_corrupt());
}

TEST_F(TfRecordTest, LengthCrcFieldCorrupt) {
  std::string bytes = write_records(path("a"), {"first"});
  bytes[9] ^= 0x10;
  write_bytes(path("bad-len-crc"), bytes);
  std::string err;
  read_all(path("bad-len-crc"), &err);
  EXPECT_NE(err.find("byte 0: length CRC mismatch"), std::string::npos) << err;
}

TEST_F(TfRecordTest, TruncationsAreErrorsAtTheRecordStart) {
  const std::string bytes = write_records(path("a"), {"first", "second"});
  // Cut inside record 1's header, data and footer.
  for (size_t cut : {size_t{21 + 5}, size_t{21 + 12}, size_t{21 + 12 + 3}, bytes.size() - 1}) {
    write_bytes(path("cut"), bytes.substr(0, cut));
    auto reader = TfRecordReader::open(path("cut"));
    ASSERT_TRUE(reader.ok());
    std::string record;
    ASSERT_TRUE(*reader->read(&record));
    EXPECT_EQ(record, "first");
    auto bad = reader->read(&record);
    ASSERT_FALSE(bad.ok()) << cut;
    const std::string msg = bad.status().message();
    EXPECT_EQ(msg.rfind(path("cut") + ": corrupt record at byte 21: truncated", 0), 0u) << msg;
    EXPECT_FALSE(reader->skip_corrupt());
  }
}

TEST_F(TfRecordTest, HugeLengthWithValidCrcIsTruncationNotAllocation) {
  // A header claiming 2^40 bytes, CRC-valid, and nothing after it.
  std::string header(8, '\0');
  header[5] = 0x01;
  std::string framed = frame_tfrecord("");
  framed.replace(0, 8, header);
  const uint32_t crc = mask_crc32c(crc32c(header.data(), 8));
  for (int i = 0; i < 4; ++i) framed[8 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  write_bytes(path("huge"), framed.substr(0, 12));
  std::string err;
  read_all(path("huge"), &err);
  EXPECT_NE(err.find("byte 0: truncated record"), std::string::npos) << err;
}

TEST_F(TfRecordTest, WriterReportsUnwritablePath) {
  auto writer = TfRecordWriter::create(path("no-such-dir/file"));
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("no-such-dir/file"), std::string::npos);
}

}  // namespace
}  // namespace ic
