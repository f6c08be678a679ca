// Entries of the raw tree that cannot be read as image files (a dangling symbolic link, a FIFO
// or a directory named like an image, a file without read permission) are skipped, named and
// counted like undecodable images; the rest converts. Only more than --max_bad_input_fraction
// of a split skipped fails the run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/image_codec.h"
#include "data/imagenet_converter.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

class UnreadableTree {
 public:
  UnreadableTree() {
    path_ = fs::temp_directory_path() / ("ic_converter_unreadable_" + std::to_string(::getpid()) +
                                         "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~UnreadableTree() {
    std::error_code ec;
    fs::permissions(path_ / "raw/train/n01/locked.JPEG", fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  std::string sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::string tiny_jpeg() {
  RgbImage image;
  image.height = 16;
  image.width = 24;
  image.pixels.assign(16 * 24 * 3, 99);
  return *encode_jpeg(image, 90);
}

// train/n01: two good images and four entries that are no readable image file.
void make_tree(const UnreadableTree& tree) {
  fs::create_directories(tree.sub("raw/train/n01"));
  std::ofstream(tree.sub("raw/train/n01/a.JPEG"), std::ios::binary) << tiny_jpeg();
  std::ofstream(tree.sub("raw/train/n01/b.JPEG"), std::ios::binary) << tiny_jpeg();
  fs::create_symlink(tree.sub("raw/train/n01/gone.JPEG"), tree.sub("raw/train/n01/dangling.JPEG"));
  ASSERT_EQ(::mkfifo(tree.sub("raw/train/n01/fifo.JPEG").c_str(), 0644), 0);
  fs::create_directories(tree.sub("raw/train/n01/folder.JPEG"));
  // root reads it anyway; anyone else cannot open it.
  std::ofstream(tree.sub("raw/train/n01/locked.JPEG"), std::ios::binary) << tiny_jpeg();
  fs::permissions(tree.sub("raw/train/n01/locked.JPEG"), fs::perms::none);
}

bool names(const std::vector<std::string>& reports, const std::string& what) {
  return std::any_of(reports.begin(), reports.end(),
                     [&](const std::string& r) { return r.find(what) != std::string::npos; });
}

TEST(ConverterUnreadableEntries, AreSkippedNamedAndCountedAndTheRestConverts) {
  UnreadableTree tree;
  make_tree(tree);
  ConverterOptions options;
  options.raw_data_dir = tree.sub("raw");
  options.output_dir = tree.sub("out");
  options.train_shards = 1;
  options.num_threads = 1;
  std::vector<std::string> log;
  options.log = [&](const std::string& line) { log.push_back(line); };
  Result<ConversionSummary> summary = convert_imagenet(options);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  const SplitSummary& train = summary->train;
  const bool root = ::geteuid() == 0;
  EXPECT_EQ(train.images, 6);
  EXPECT_EQ(train.written, root ? 3 : 2);
  EXPECT_EQ(train.skipped, root ? 3 : 4);
  const std::vector<std::string>& skipped = train.skipped_images;
  EXPECT_TRUE(names(skipped, "dangling.JPEG: a symbolic link to a missing file")) << skipped[0];
  EXPECT_TRUE(names(skipped, "fifo.JPEG: not an image file: a FIFO"));
  EXPECT_TRUE(names(skipped, "folder.JPEG: not an image file: a directory"));
  if (!root) {
    EXPECT_TRUE(names(skipped, "locked.JPEG: cannot open: Permission denied"));
  }
  EXPECT_TRUE(names(log, "skipping unreadable image " + tree.sub("raw/train/n01/fifo.JPEG")));
  EXPECT_TRUE(fs::exists(tree.sub("out/train-00000-of-00001")));
}

TEST(ConverterUnreadableEntries, MoreThanTheAllowedFractionFailsNamingOne) {
  UnreadableTree tree;
  make_tree(tree);
  ConverterOptions options;
  options.raw_data_dir = tree.sub("raw");
  options.output_dir = tree.sub("out");
  options.train_shards = 1;
  options.num_threads = 1;
  options.max_bad_input_fraction = 0.25;
  Result<ConversionSummary> summary = convert_imagenet(options);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::data_loss);
  EXPECT_NE(summary.status().message().find("train: "), std::string::npos);
  EXPECT_NE(summary.status().message().find(" of 6 images could not be read or decoded"),
            std::string::npos)
      << summary.status().message();
  EXPECT_NE(summary.status().message().find("--max_bad_input_fraction=0.25"), std::string::npos);
  options.max_bad_input_fraction = 0.7;  // 4 of 6 at most
  EXPECT_TRUE(convert_imagenet(options).ok());
}

}  // namespace
}  // namespace ic
