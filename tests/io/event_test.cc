#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "io/event_reader.h"
#include "io/event_writer.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

class EventTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("ic_events_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// Bit-by-bit CRC-32C (Castagnoli, reflected polynomial 0x82f63b78): an independent check of the
// framing the writer produces.
uint32_t reference_crc32c(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (const char c : bytes) {
    crc ^= static_cast<uint8_t>(c);
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
uint32_t reference_masked(const std::string& bytes) {
  const uint32_t crc = reference_crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
uint64_t le(const std::string& s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(s[at + static_cast<size_t>(i)]);
  return v;
}

TEST(ReferenceCrc, KnownVector) {
  EXPECT_EQ(reference_crc32c("123456789"), 0xe3069283u);  // the CRC-32C check value
}

TEST_F(EventTest, WritesScalarsThatReadBack) {
  Result<std::unique_ptr<EventWriter>> w = EventWriter::create(dir_ + "/eval");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EventWriter& writer = **w;
  EXPECT_TRUE(std::regex_match(fs::path(writer.path()).filename().string(),
                               std::regex(R"(events\.out\.tfevents\.\d{10}\..+)")))
      << writer.path();
  EXPECT_EQ(fs::path(writer.path()).parent_path(), fs::path(dir_ + "/eval"));
  ASSERT_TRUE(writer.add_scalar("loss", 12.6237, 100).ok());
  ASSERT_TRUE(writer.add_scalar("learning_rate", 0.66, 100).ok());
  ASSERT_TRUE(writer.add_scalars({{"accuracy", 0.25}, {"accuracy@5", 0.5}}, 200).ok());
  ASSERT_TRUE(writer.flush().ok());

  // Readable while the writer is still open (TensorBoard reads a live file).
  Result<std::vector<tensorflow::Event>> events = read_events(writer.path());
  ASSERT_TRUE(events.ok()) << events.status().message();
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ((*events)[0].file_version(), "brain.Event:2");
  EXPECT_GT((*events)[0].wall_time(), 1.5e9);
  EXPECT_EQ((*events)[3].summary().value_size(), 2);

  Result<std::vector<ScalarEvent>> scalars = read_scalar_events(writer.path());
  ASSERT_TRUE(scalars.ok()) << scalars.status().message();
  ASSERT_EQ(scalars->size(), 4u);
  const std::vector<std::tuple<std::string, int64_t, float>> want = {{"loss", 100, 12.6237f},
                                                                     {"learning_rate", 100, 0.66f},
                                                                     {"accuracy", 200, 0.25f},
                                                                     {"accuracy@5", 200, 0.5f}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*scalars)[i].tag, std::get<0>(want[i]));
    EXPECT_EQ((*scalars)[i].step, std::get<1>(want[i]));
    EXPECT_EQ((*scalars)[i].value, std::get<2>(want[i]));
    EXPECT_GE((*scalars)[i].wall_time, (*events)[0].wall_time());
  }
}

TEST_F(EventTest, RecordsAreTfRecordFramedWithValidCrcs) {
  std::string path;
  {
    Result<std::unique_ptr<EventWriter>> w = EventWriter::create(dir_);
    ASSERT_TRUE(w.ok()) << w.status().message();
    path = (*w)->path();
    ASSERT_TRUE((*w)->add_scalar("loss", 1.0, 7).ok());
  }  // the destructor flushes
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  size_t at = 0;
  int records = 0;
  while (at < bytes.size()) {
    ASSERT_GE(bytes.size() - at, 16u);
    const uint64_t length = le(bytes, at, 8);
    EXPECT_EQ(le(bytes, at + 8, 4), reference_masked(bytes.substr(at, 8)));
    ASSERT_LE(at + 12 + length + 4, bytes.size());
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(le(bytes, at + 12 + length, 4), reference_masked(data));
    tensorflow::Event event;
    ASSERT_TRUE(event.ParseFromString(data));
    if (records == 0) {
      EXPECT_EQ(event.file_version(), "brain.Event:2");
    }
    if (records == 1) {
      EXPECT_EQ(event.step(), 7);
      EXPECT_EQ(event.summary().value(0).tag(), "loss");
      EXPECT_EQ(event.summary().value(0).simple_value(), 1.0f);
    }
    at += 12 + length + 4;
    ++records;
  }
  EXPECT_EQ(records, 2);
}

TEST_F(EventTest, CorruptFileIsRejectedWithItsName) {
  std::string path;
  {
    Result<std::unique_ptr<EventWriter>> w = EventWriter::create(dir_);
    ASSERT_TRUE(w.ok());
    path = (*w)->path();
    ASSERT_TRUE((*w)->add_scalar("loss", 3.0, 1).ok());
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-6, std::ios::end);  // inside the last record's data
    f.put('\x7f');
  }
  Result<std::vector<ScalarEvent>> r = read_scalar_events(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
}

TEST_F(EventTest, TwoWritersInOneSecondGetDifferentFiles) {
  Result<std::unique_ptr<EventWriter>> a = EventWriter::create(dir_);
  Result<std::unique_ptr<EventWriter>> b = EventWriter::create(dir_);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->path(), (*b)->path());
  ASSERT_TRUE((*a)->add_scalar("x", 1, 1).ok());
  ASSERT_TRUE((*b)->add_scalar("y", 2, 2).ok());
  ASSERT_TRUE((*a)->flush().ok() && (*b)->flush().ok());
  EXPECT_EQ(read_scalar_events((*a)->path())->at(0).tag, "x");
  EXPECT_EQ(read_scalar_events((*b)->path())->at(0).tag, "y");
}

TEST_F(EventTest, UncreatableDirectoryIsAnError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/file") << "x";
  Result<std::unique_ptr<EventWriter>> w = EventWriter::create(dir_ + "/file/sub");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find(dir_ + "/file/sub"), std::string::npos)
      << w.status().message();
}

}  // namespace
}  // namespace ic
