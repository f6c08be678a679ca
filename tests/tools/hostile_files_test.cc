// The real programs against hostile files: decompression bombs in a training shard, and raw-tree
// entries the converter cannot read as image files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/example.h"
#include "data/image_codec.h"
#include "io/tfrecord.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::run_bounded;
using testing::run_tool;
using testing::TempDir;
using testing::ToolOutput;

uint32_t png_crc(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) {
    crc ^= static_cast<uint8_t>(c);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? 0xEDB88320u : 0u);
  }
  return crc ^ 0xFFFFFFFFu;
}

RgbImage flat_image(int height, int width) {
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.assign(static_cast<size_t>(height) * width * 3, 77);
  return image;
}

// A valid PNG (CRC and all) whose IHDR claims 60000x60000: decoding it would take 10.8 GB.
std::string png_bomb() {
  std::string bytes = *encode_png(flat_image(4, 4));
  for (const size_t at : {size_t{16}, size_t{20}}) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>(60000u >> (24 - 8 * i));
  }
  const uint32_t crc = png_crc(std::string_view(bytes).substr(12, 17));
  for (int i = 0; i < 4; ++i) bytes[29 + i] = static_cast<char>(crc >> (24 - 8 * i));
  return bytes;
}

// A JPEG whose frame header claims 60000x60000.
std::string jpeg_bomb() {
  std::string bytes = *encode_jpeg(flat_image(16, 16), 90);
  const size_t sof = bytes.find("\xFF\xC0");
  for (const size_t at : {sof + 5, sof + 7}) {
    bytes[at] = static_cast<char>(60000 >> 8);
    bytes[at + 1] = static_cast<char>(60000 & 0xff);
  }
  return bytes;
}

// Rewrites `path` with its records and `extra` ones after them.
void append_records(const std::string& path, const std::vector<std::string>& extra) {
  std::vector<std::string> records;
  {
    Result<TfRecordReader> reader = TfRecordReader::open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    std::string record;
    for (;;) {
      Result<bool> got = reader->read(&record);
      ASSERT_TRUE(got.ok()) << got.status().message();
      if (!*got) break;
      records.push_back(record);
    }
  }
  records.insert(records.end(), extra.begin(), extra.end());
  Result<TfRecordWriter> writer = TfRecordWriter::create(path);
  ASSERT_TRUE(writer.ok());
  for (const std::string& r : records) ASSERT_TRUE(writer->write(r).ok());
  ASSERT_TRUE(writer->close().ok());
}

std::string bomb_record(const std::string& bytes, const std::string& name) {
  ImageExample example;
  example.encoded = bytes;
  example.label = 1;
  example.filename = name;
  return encode_image_example(example);
}

// A PNG bomb must not get the trainer killed for memory: every decoder refuses it from its
// header, so it is one more skipped image (tests/data/hostile_image_test.cc checks that the
// refusal names the claimed size and allocates nothing).
TEST(HostileFiles, DecompressionBombsInATrainingShardAreSkippedAndCounted) {
  TempDir dir;
  ToolOutput made = run_tool("make_fake_imagenet", "--output_dir=" + dir.sub("data") +
                                                       " --num_train_images=16 "
                                                       "--num_validation_images=4 "
                                                       "--train_shards=1 --validation_shards=1 "
                                                       "--image_size=40 --num_classes=10 "
                                                       "--num_threads=1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  append_records(dir.sub("data/train-00000-of-00001"),
                 {bomb_record(png_bomb(), "bomb.png"), bomb_record(jpeg_bomb(), "bomb.JPEG")});
  ToolOutput trained = run_bounded(
      "inception_v3",
      "--mode=train_and_eval --train_steps=12 --iterations=12 --data_dir=" + dir.sub("data") +
          " --model_dir=" + dir.sub("model") +
          " --use_tpu=False --num_threads=1 --train_batch_size=2 --eval_batch_size=2 "
          "--width=75 --height=75 --depth_multiplier=0.1 --num_classes=11 "
          "--save_checkpoints_secs=0 --num_parallel_calls=1 --max_bad_input_fraction=0.5");
  EXPECT_EQ(trained.exit_code, 0) << trained.output;  // not killed for memory
  // Both bombs are read at least once in 12 steps of 2 over 18 records.
  EXPECT_TRUE(trained.contains(", skipped ")) << trained.output;
  EXPECT_FALSE(trained.contains("skipped 0 bad")) << trained.output;
  EXPECT_TRUE(trained.contains("Evaluation results")) << trained.output;
}

TEST(HostileFiles, TheConverterSkipsEntriesThatAreNoImageFilesAndConvertsTheRest) {
  TempDir dir;
  ToolOutput raw_made =
      run_tool("make_fake_imagenet", "--raw_layout --output_dir=" + dir.sub("raw") +
                                         " --num_train_images=6 --num_validation_images=2 "
                                         "--num_classes=2 --num_threads=1");
  ASSERT_EQ(raw_made.exit_code, 0) << raw_made.output;
  std::string synset;
  for (const auto& entry : fs::directory_iterator(dir.sub("raw/train"))) {
    synset = entry.path().string();
  }
  ASSERT_FALSE(synset.empty());
  fs::create_symlink(synset + "/missing.JPEG", synset + "/dangling.JPEG");
  ASSERT_EQ(::mkfifo((synset + "/fifo.JPEG").c_str(), 0644), 0);
  ToolOutput converted =
      run_bounded("imagenet_to_tfrecord",
                  "--raw_data_dir=" + dir.sub("raw") + " --local_scratch_dir=" + dir.sub("out") +
                      " --train_shards=1 --validation_shards=1",
                  120);
  EXPECT_EQ(converted.exit_code, 0) << converted.output;
  EXPECT_TRUE(converted.contains(synset + "/dangling.JPEG: a symbolic link to a missing file"))
      << converted.output;
  EXPECT_TRUE(converted.contains(synset + "/fifo.JPEG: not an image file: a FIFO"))
      << converted.output;
  EXPECT_TRUE(converted.contains("train: 8 images, 1 shards (0 resumed): 6 written"))
      << converted.output;
  EXPECT_TRUE(converted.contains("2 skipped")) << converted.output;

  ToolOutput strict =
      run_bounded("imagenet_to_tfrecord",
                  "--raw_data_dir=" + dir.sub("raw") + " --local_scratch_dir=" + dir.sub("out2") +
                      " --train_shards=1 --validation_shards=1 "
                      "--max_bad_input_fraction=0.1",
                  120);
  EXPECT_NE(strict.exit_code, 0) << strict.output;
  EXPECT_TRUE(strict.contains("train: 2 of 8 images could not be read or decoded"))
      << strict.output;
}

}  // namespace
}  // namespace ic
