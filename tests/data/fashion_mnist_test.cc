#include "data/fashion_mnist.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/image_codec.h"
#include "data/imagenet_converter.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

void write_plain(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const fs::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

// IDX files with `n` 4x3 images whose pixels encode their index, labels i % 10.
std::string idx_images(int n) {
  std::string s = be32(0x00000803) + be32(n) + be32(4) + be32(3);
  for (int i = 0; i < n; ++i) s += std::string(12, static_cast<char>(i * 20));
  return s;
}
std::string idx_labels(int n) {
  std::string s = be32(0x00000801) + be32(n);
  for (int i = 0; i < n; ++i) s += static_cast<char>(i % 10);
  return s;
}

class FashionMnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ic_fmnist_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "idx");
    // Training files gzipped (as Debian ships them), test files plain.
    write_gz(root_ / "idx" / "train-images-idx3-ubyte.gz", idx_images(12));
    write_gz(root_ / "idx" / "train-labels-idx1-ubyte.gz", idx_labels(12));
    write_plain(root_ / "idx" / "t10k-images-idx3-ubyte", idx_images(5));
    write_plain(root_ / "idx" / "t10k-labels-idx1-ubyte", idx_labels(5));
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(FashionMnistTest, ReadsIdxGzippedAndPlain) {
  auto images = read_idx_images((root_ / "idx" / "train-images-idx3-ubyte.gz").string());
  ASSERT_TRUE(images.ok()) << images.status().message();
  EXPECT_EQ(images->count, 12);
  EXPECT_EQ(images->rows, 4);
  EXPECT_EQ(images->cols, 3);
  EXPECT_EQ(images->pixels[5 * 12], 100);
  auto labels = read_idx_labels((root_ / "idx" / "t10k-labels-idx1-ubyte").string());
  ASSERT_TRUE(labels.ok());
  EXPECT_EQ(*labels, (std::vector<uint8_t>{0, 1, 2, 3, 4}));
  // A labels file is not an images file; a truncated file is an error.
  EXPECT_FALSE(read_idx_images((root_ / "idx" / "t10k-labels-idx1-ubyte").string()).ok());
  write_plain(root_ / "short", idx_images(3).substr(0, 30));
  EXPECT_FALSE(read_idx_images((root_ / "short").string()).ok());
}

// Found by fuzz/fuzz_idx: a few bytes claiming 4 billion labels (or 4 GiB of pixels) made the
// reader allocate all of it before finding the file short. It reads what is there and fails.
// (The memory itself is checked by the fuzz regression inputs, under libFuzzer's malloc limit.)
TEST_F(FashionMnistTest, HugeClaimedCountsOfShortFilesAreErrors) {
  write_plain(root_ / "labels", be32(0x00000801) + be32(0xffffffffu) + "\x01\x02");
  Result<std::vector<uint8_t>> labels = read_idx_labels((root_ / "labels").string());
  ASSERT_FALSE(labels.ok());
  EXPECT_NE(labels.status().message().find("truncated"), std::string::npos)
      << labels.status().message();
  write_gz(root_ / "images.gz", be32(0x00000803) + be32(0x10000000u) + be32(4) + be32(4) + "ab");
  Result<IdxImages> images = read_idx_images((root_ / "images.gz").string());
  ASSERT_FALSE(images.ok());
  EXPECT_NE(images.status().message().find("truncated"), std::string::npos)
      << images.status().message();
}

TEST_F(FashionMnistTest, WritesRawLayoutTheConverterReads) {
  FashionMnistOptions o;
  o.input_dir = (root_ / "idx").string();
  o.output_dir = (root_ / "raw").string();
  auto summary = fashion_mnist_to_raw(o);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->train_images, 12);
  EXPECT_EQ(summary->validation_images, 5);
  const fs::path first = root_ / "raw" / "train" / "class_0_tshirt" / "class_0_tshirt_00000.JPEG";
  ASSERT_TRUE(fs::exists(first));
  std::ifstream in(first, std::ios::binary);
  const std::string jpeg((std::istreambuf_iterator<char>(in)), {});
  auto header = read_jpeg_header(jpeg);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->height, 4);
  EXPECT_EQ(header->width, 3);
  EXPECT_EQ(header->components, 3);

  ConverterOptions c;
  c.raw_data_dir = o.output_dir;
  c.output_dir = (root_ / "out").string();
  c.train_shards = 2;
  c.validation_shards = 1;
  auto converted = convert_imagenet(c);
  ASSERT_TRUE(converted.ok()) << converted.status().message();
  EXPECT_EQ(converted->train.written, 12);
  EXPECT_EQ(converted->validation.written, 5);
  EXPECT_EQ(converted->train.reencoded, 0);
  auto raw = list_raw_imagenet(o.output_dir, 0);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->labels.at("class_0_tshirt"), 1);  // class k -> label k + 1
  EXPECT_EQ(raw->labels.at("class_9_ankle_boot"), 10);
  EXPECT_EQ(raw->validation[3].synset, "class_3_dress");
}

TEST_F(FashionMnistTest, MissingFilesNameThePackage) {
  FashionMnistOptions o;
  o.input_dir = (root_ / "nowhere").string();
  o.output_dir = (root_ / "raw").string();
  auto summary = fashion_mnist_to_raw(o);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("dataset-fashion-mnist"), std::string::npos);
}

// Debian's real files, when installed: the test set is 10000 28x28 images, labels 0..9.
TEST(FashionMnistDebian, RealTestSetReads) {
  const fs::path dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "not installed";
  auto images = read_idx_images((dir / "t10k-images-idx3-ubyte.gz").string());
  ASSERT_TRUE(images.ok()) << images.status().message();
  EXPECT_EQ(images->count, 10000);
  EXPECT_EQ(images->rows, 28);
  EXPECT_EQ(images->cols, 28);
  auto labels = read_idx_labels((dir / "t10k-labels-idx1-ubyte.gz").string());
  ASSERT_TRUE(labels.ok());
  ASSERT_EQ(labels->size(), 10000u);
  std::vector<int> per_class(10, 0);
  for (uint8_t l : *labels) ++per_class.at(l);
  for (int c : per_class) EXPECT_EQ(c, 1000);  // the test set is balanced
}

}  // namespace
}  // namespace ic
