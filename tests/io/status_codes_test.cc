// The codes io/ returns at the source of its errors, that callers act on: a missing file or
// checkpoint is not_found, damaged bytes are data_loss, another run's checkpoint in the way is
// already_exists.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/checkpoint_dir.h"
#include "io/file_bytes.h"
#include "io/file_system.h"
#include "io/safetensors.h"
#include "io/tensor_bundle.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

class StatusCodes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("ic_status_codes_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

TEST_F(StatusCodes, AMissingFileIsNotFound) {
  const Result<std::unique_ptr<RandomAccessFile>> opened =
      local_file_system().open_read(path("absent"));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::not_found) << opened.status().message();
  EXPECT_EQ(read_file_to_string(path("absent"), 100).status().code(), StatusCode::not_found);
  EXPECT_EQ(TfRecordReader::open(path("absent")).status().code(), StatusCode::not_found);
  EXPECT_EQ(rename_file(path("absent"), path("other")).code(), StatusCode::not_found);
}

TEST_F(StatusCodes, AMissingCheckpointIsNotFoundInEitherFormat) {
  for (const char* name : {"model.ckpt-3", "model.ckpt-3.index", "model.ckpt-3.safetensors"}) {
    const Result<CheckpointContents> read = read_checkpoint(path(name));
    ASSERT_FALSE(read.ok()) << name;
    EXPECT_EQ(read.status().code(), StatusCode::not_found) << read.status().message();
  }
  // A bundle whose data file went (pruned while it was read) is not found either.
  float value = 1;
  ASSERT_TRUE(
      write_tensor_bundle(path("model.ckpt-4"), {}, {{"w", DType::f32, Shape{1}, &value}}).ok());
  fs::remove(bundle_data_path(path("model.ckpt-4"), 0, 1));
  const Result<CheckpointContents> half = read_checkpoint(path("model.ckpt-4"));
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), StatusCode::not_found) << half.status().message();
}

TEST_F(StatusCodes, AFlippedTfRecordCrcIsDataLoss) {
  {
    Result<TfRecordWriter> writer = TfRecordWriter::create(path("records"));
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE(writer->write("a record of some bytes").ok());
    ASSERT_TRUE(writer->close().ok());
  }
  std::string bytes = testing::read_file(path("records"));
  bytes[bytes.size() - 1] = static_cast<char>(bytes[bytes.size() - 1] ^ 0x01);  // the data CRC
  testing::write_file(path("records"), bytes);
  Result<TfRecordReader> reader = TfRecordReader::open(path("records"));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::string record;
  const Result<bool> got = reader->read(&record);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::data_loss) << got.status().message();
  EXPECT_NE(got.status().message().find("data CRC mismatch"), std::string::npos);

  // A truncated record too.
  testing::write_file(path("records"), bytes.substr(0, bytes.size() - 3));
  Result<TfRecordReader> short_reader = TfRecordReader::open(path("records"));
  ASSERT_TRUE(short_reader.ok());
  EXPECT_EQ(short_reader->read(&record).status().code(), StatusCode::data_loss);
}

TEST_F(StatusCodes, DamagedCheckpointsAreDataLoss) {
  float values[4] = {1, 2, 3, 4};
  const std::vector<TensorView> tensors = {{"w", DType::f32, Shape{4}, values}};
  ASSERT_TRUE(write_safetensors(path("a.safetensors"), {}, tensors).ok());
  const std::string bytes = testing::read_file(path("a.safetensors"));
  testing::write_file(path("a.safetensors"), bytes.substr(0, bytes.size() - 4));
  const Result<SafetensorsFile> truncated = read_safetensors(path("a.safetensors"));
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), StatusCode::data_loss) << truncated.status().message();

  ASSERT_TRUE(write_tensor_bundle(path("b"), {}, tensors).ok());
  const std::string data_path = bundle_data_path(path("b"), 0, 1);
  std::string data = testing::read_file(data_path);
  data[0] = static_cast<char>(data[0] ^ 0x40);
  testing::write_file(data_path, data);
  const Result<CheckpointContents> flipped = read_tensor_bundle(path("b"));
  ASSERT_FALSE(flipped.ok());
  EXPECT_EQ(flipped.status().code(), StatusCode::data_loss) << flipped.status().message();
}

TEST_F(StatusCodes, AnotherRunsCheckpointAtTheSameStepIsAlreadyExists) {
  float value = 0;
  const auto save = [&](const std::string& run) {
    return save_checkpoint(dir_, 4, {{"model", "inception_v3"}, {kRunIdKey, run}},
                           {{"w", DType::f32, Shape{1}, &value}});
  };
  ASSERT_TRUE(save("run-a").ok());
  const Status refused = save("run-b");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), StatusCode::already_exists) << refused.message();
}

TEST_F(StatusCodes, AnExclusiveWriteOverAnExistingFileIsAlreadyExists) {
  testing::write_file(path("taken"), "someone's");
  const Result<std::unique_ptr<WritableFile>> opened =
      local_file_system().open_write(path("taken"), /*exclusive=*/true);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::already_exists) << opened.status().message();
}

TEST_F(StatusCodes, ContextKeepsTheCodeOnTheWayUp) {
  // latest_checkpoint names a save whose files are gone: the model_dir is damaged, not empty.
  testing::write_file(path("checkpoint"), "model_checkpoint_path: \"model.ckpt-9\"\n");
  const Result<std::optional<std::string>> latest = latest_checkpoint(dir_);
  ASSERT_FALSE(latest.ok());
  EXPECT_EQ(latest.status().code(), StatusCode::data_loss) << latest.status().message();
}

}  // namespace
}  // namespace ic
