#include "data/fake_imagenet.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/example.h"
#include "data/imagenet_converter.h"
#include "io/file_bytes.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

std::vector<ImageExample> read_records(const fs::path& p) {
  std::vector<ImageExample> out;
  auto reader = TfRecordReader::open(p.string());
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return out;
  std::string record;
  while (true) {
    auto more = reader->read(&record);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    out.push_back(*decode_image_example(record));
  }
  return out;
}

class FakeImageNetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ic_fake_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  FakeImageNetOptions small(const std::string& sub) const {
    FakeImageNetOptions o;
    o.output_dir = (root_ / sub).string();
    o.num_train_images = 10;
    o.num_validation_images = 5;
    o.train_shards = 3;
    o.validation_shards = 2;
    o.image_size = 32;
    o.image_width = 40;
    o.num_classes = 4;
    o.seed = 7;
    return o;
  }
  fs::path root_;
};

TEST_F(FakeImageNetTest, WritesConverterFormat) {
  FakeImageNetOptions o = small("a");
  o.num_threads = 2;
  ASSERT_TRUE(make_fake_imagenet(o).ok());
  std::vector<ImageExample> train;
  for (int s = 0; s < 3; ++s) {
    for (auto& e : read_records(root_ / "a" / shard_name("train", s, 3))) train.push_back(e);
  }
  ASSERT_EQ(train.size(), 10u);
  std::vector<int> per_label(5, 0);
  for (const auto& e : train) {
    ASSERT_GE(e.label, 1);
    ASSERT_LE(e.label, 4);
    ++per_label[e.label];
    EXPECT_EQ(e.synset, fake_synset(e.label));
    EXPECT_EQ(e.height, 32);
    EXPECT_EQ(e.width, 40);
    EXPECT_EQ(e.format, "JPEG");
    EXPECT_EQ(e.channels, 3);
    auto image = decode_image(e.encoded);
    ASSERT_TRUE(image.ok());
    EXPECT_EQ(image->height, 32);
    EXPECT_EQ(image->width, 40);
  }
  EXPECT_EQ(per_label[0], 0);
  size_t validation = 0;
  for (int s = 0; s < 2; ++s) {
    validation += read_records(root_ / "a" / shard_name("validation", s, 2)).size();
  }
  EXPECT_EQ(validation, 5u);
  EXPECT_EQ(fake_synset(1), "fake0001");
}

TEST_F(FakeImageNetTest, SameSeedSameBytesWhateverTheThreads) {
  FakeImageNetOptions a = small("a");
  a.num_threads = 1;
  FakeImageNetOptions b = small("b");
  b.num_threads = 3;
  FakeImageNetOptions c = small("c");
  c.seed = 8;
  ASSERT_TRUE(make_fake_imagenet(a).ok());
  ASSERT_TRUE(make_fake_imagenet(b).ok());
  ASSERT_TRUE(make_fake_imagenet(c).ok());
  const std::string name = shard_name("train", 1, 3);
  EXPECT_EQ(testing::read_file(root_ / "a" / name), testing::read_file(root_ / "b" / name));
  EXPECT_NE(testing::read_file(root_ / "a" / name), testing::read_file(root_ / "c" / name));
}

TEST_F(FakeImageNetTest, ImagesAreSmoothNotNoise) {
  const RgbImage image = make_fake_image(1, 0, 1, 10, 64, 64);
  // Neighbouring pixels differ by little on average (noise would be ~85 levels).
  double diff = 0;
  for (int y = 0; y < 64; ++y) {
    for (int x = 1; x < 64; ++x) {
      diff += std::abs(image.pixels[(y * 64 + x) * 3] - image.pixels[(y * 64 + x - 1) * 3]);
    }
  }
  EXPECT_LT(diff / (64 * 63), 12.0);
  // ...but not flat either.
  EXPECT_GT(diff / (64 * 63), 0.5);
}

TEST_F(FakeImageNetTest, RawLayoutFeedsTheConverter) {
  FakeImageNetOptions o = small("raw");
  o.raw_layout = true;
  ASSERT_TRUE(make_fake_imagenet(o).ok());
  EXPECT_TRUE(fs::exists(root_ / "raw" / "synset_labels.txt"));
  ConverterOptions c;
  c.raw_data_dir = (root_ / "raw").string();
  c.output_dir = (root_ / "out").string();
  c.train_shards = 2;
  c.validation_shards = 1;
  auto summary = convert_imagenet(c);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->train.written, 10);
  EXPECT_EQ(summary->validation.written, 5);
  EXPECT_EQ(summary->train.reencoded, 0);
  // Labels survive the round trip through the raw tree: fakeNNNN sorts as its number.
  for (const auto& e : read_records(root_ / "out" / shard_name("validation", 0, 1))) {
    EXPECT_EQ(e.synset, fake_synset(e.label));
  }
}

TEST_F(FakeImageNetTest, RejectsBadOptions) {
  FakeImageNetOptions o = small("bad");
  o.num_classes = 0;
  EXPECT_FALSE(make_fake_imagenet(o).ok());
  o = small("bad");
  o.output_dir.clear();
  EXPECT_FALSE(make_fake_imagenet(o).ok());
}

TEST_F(FakeImageNetTest, ToolWritesShards) {
  const char* bin_dir = std::getenv("IC_TEST_BIN_DIR");
  if (!bin_dir || !fs::exists(fs::path(bin_dir) / "make_fake_imagenet")) {
    GTEST_SKIP() << "IC_TEST_BIN_DIR/make_fake_imagenet not built";
  }
  const std::string tool = (fs::path(bin_dir) / "make_fake_imagenet").string();
  const std::string cmd = tool + " --output_dir=" + (root_ / "t").string() +
                          " --num_train_images=6 --num_validation_images=2 --train_shards=2"
                          " --validation_shards=1 --image_size=16 --num_classes=3 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_records(root_ / "t" / "train-00001-of-00002").size(), 3u);
  EXPECT_EQ(read_records(root_ / "t" / "validation-00000-of-00001").size(), 2u);
  EXPECT_NE(std::system((tool + " --bogus 2>/dev/null").c_str()), 0);
}

}  // namespace
}  // namespace ic
