#include <gtest/gtest.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "data/example.h"
#include "data/image_codec.h"
#include "data/imagenet_converter.h"
#include "io/file_bytes.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

RgbImage colour_image(int height, int width, int seed) {
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = static_cast<uint8_t>((i * 7 + seed * 31) % 200 + 20);
  }
  return image;
}

// Encodes with TurboJPEG directly from 4-channel or 1-channel input (the codec writes RGB only).
std::string tj_encode(const std::vector<uint8_t>& pixels, int height, int width, int pixel_format,
                      int subsampling) {
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, pixels.data(), width, 0, height, pixel_format, &buffer, &size,
                             subsampling, 95, 0);
  std::string out = rc == 0 ? std::string(reinterpret_cast<char*>(buffer), size) : std::string();
  tjFree(buffer);
  tjDestroy(handle);
  return out;
}

std::string cmyk_jpeg(int height, int width) {
  std::vector<uint8_t> cmyk(static_cast<size_t>(height) * width * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<uint8_t>((i * 13) % 256);
  return tj_encode(cmyk, height, width, TJPF_CMYK, TJSAMP_444);
}

std::string gray_jpeg(int height, int width) {
  std::vector<uint8_t> gray(static_cast<size_t>(height) * width);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<uint8_t>(i % 256);
  return tj_encode(gray, height, width, TJPF_GRAY, TJSAMP_GRAY);
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<ImageExample> read_shard(const fs::path& p) {
  std::vector<ImageExample> out;
  auto reader = TfRecordReader::open(p.string());
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return out;
  std::string record;
  for (;;) {
    auto more = reader->read(&record);
    EXPECT_TRUE(more.ok()) << more.status().message();
    if (!more.ok() || !*more) return out;
    auto e = decode_image_example(record);
    EXPECT_TRUE(e.ok()) << e.status().message();
    if (e.ok()) out.push_back(*e);
  }
}

class ConverterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ic_converter_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    raw_ = root_ / "raw";
    out_ = root_ / "out";
    // Train: 3 synsets x 3 images, plus the dirty files in n02.
    const char* synsets[] = {"n03", "n01", "n02"};
    int seed = 0;
    for (const char* synset : synsets) {
      for (int i = 0; i < 3; ++i) {
        write_file(
            raw_ / "train" / synset / (std::string(synset) + "_" + std::to_string(i) + ".JPEG"),
            *encode_jpeg(colour_image(20 + i, 30, seed++), 90));
      }
    }
    write_file(raw_ / "train" / "n02" / "n02_cmyk.JPEG", cmyk_jpeg(16, 24));
    write_file(raw_ / "train" / "n02" / "n02_png.JPEG", *encode_png(colour_image(12, 10, 5)));
    write_file(raw_ / "train" / "n02" / "n02_gray.JPEG", gray_jpeg(8, 16));
    write_file(raw_ / "train" / "n01" / "n01_broken.JPEG", "this is not an image");
    write_file(raw_ / "train" / "n01" / "notes.txt", "ignored: not a .JPEG");
    // Validation: 4 images; n04 appears only here, so labels come from the union.
    const char* val_synsets[] = {"n02", "n04", "n01", "n04"};
    std::string labels;
    for (int i = 0; i < 4; ++i) {
      char name[40];
      std::snprintf(name, sizeof(name), "ILSVRC2012_val_%08d.JPEG", i + 1);
      write_file(raw_ / "validation" / name, *encode_jpeg(colour_image(24, 24, 50 + i), 90));
      labels += std::string(val_synsets[i]) + "\n";
    }
    write_file(raw_ / "synset_labels.txt", labels);
  }
  void TearDown() override { fs::remove_all(root_); }

  ConverterOptions options(int train_shards = 3, int validation_shards = 2) const {
    ConverterOptions o;
    o.raw_data_dir = raw_.string();
    o.output_dir = out_.string();
    o.train_shards = train_shards;
    o.validation_shards = validation_shards;
    o.num_threads = 2;
    return o;
  }

  // All records of a split, shard by shard in order.
  std::vector<ImageExample> read_split(const std::string& prefix, int shards) const {
    std::vector<ImageExample> all;
    for (int s = 0; s < shards; ++s) {
      for (auto& e : read_shard(out_ / shard_name(prefix, s, shards))) all.push_back(e);
    }
    return all;
  }

  fs::path root_, raw_, out_;
};

TEST(ShardNaming, MatchesTensorFlow) {
  EXPECT_EQ(shard_name("train", 0, 1024), "train-00000-of-01024");
  EXPECT_EQ(shard_name("validation", 127, 128), "validation-00127-of-00128");
  // The reference converter: train 1252 per shard (last 371), validation 391 per shard (last 343).
  EXPECT_EQ(shard_range(1281167, 1024, 0).end, 1252);
  const ShardRange last = shard_range(1281167, 1024, 1023);
  EXPECT_EQ(last.end - last.begin, 371);
  EXPECT_EQ(last.end, 1281167);
  const ShardRange val_last = shard_range(50000, 128, 127);
  EXPECT_EQ(val_last.end - val_last.begin, 343);
  EXPECT_EQ(shard_range(50000, 128, 5).end - shard_range(50000, 128, 5).begin, 391);
  // More shards than items: ceil chunks, trailing shards empty.
  EXPECT_EQ(shard_range(10, 8, 4).end - shard_range(10, 8, 4).begin, 2);
  EXPECT_EQ(shard_range(10, 8, 7).end - shard_range(10, 8, 7).begin, 0);
}

TEST_F(ConverterTest, ListsLabelsFromSortedUnionAndShufflesWithFixedSeed) {
  auto raw = list_raw_imagenet(raw_.string(), 0);
  ASSERT_TRUE(raw.ok()) << raw.status().message();
  EXPECT_EQ(raw->train.size(), 13u);  // 9 + cmyk + png + gray + broken; notes.txt left out
  ASSERT_EQ(raw->validation.size(), 4u);
  const std::map<std::string, int64_t> want{{"n01", 1}, {"n02", 2}, {"n03", 3}, {"n04", 4}};
  EXPECT_EQ(raw->labels, want);
  EXPECT_EQ(fs::path(raw->validation[1].path).filename(), "ILSVRC2012_val_00000002.JPEG");
  EXPECT_EQ(raw->validation[1].synset, "n04");
  for (const auto& image : raw->train) {
    EXPECT_EQ(fs::path(image.path).parent_path().filename(), image.synset);
  }
  auto again = list_raw_imagenet(raw_.string(), 0);
  auto other = list_raw_imagenet(raw_.string(), 1);
  std::vector<std::string> a, b, c;
  for (const auto& i : raw->train) a.push_back(i.path);
  for (const auto& i : again->train) b.push_back(i.path);
  for (const auto& i : other->train) c.push_back(i.path);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::set<std::string>(a.begin(), a.end()), std::set<std::string>(c.begin(), c.end()));
  std::vector<std::string> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(a, sorted);  // 13! orders: the shuffle is not the identity
}

TEST_F(ConverterTest, LabelCountMismatchIsAnError) {
  write_file(raw_ / "synset_labels.txt", "n01\n");
  auto raw = list_raw_imagenet(raw_.string(), 0);
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("synset_labels.txt"), std::string::npos);
}

TEST(PrepareImage, FixesDirtyImagesByContent) {
  const std::string plain = *encode_jpeg(colour_image(10, 12, 1), 90);
  auto p = prepare_image(plain);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->reencoded);
  EXPECT_EQ(p->encoded, plain);  // stored unchanged
  EXPECT_EQ(p->height, 10);
  EXPECT_EQ(p->width, 12);

  for (const std::string& dirty :
       {cmyk_jpeg(16, 24), *encode_png(colour_image(16, 24, 2)), gray_jpeg(16, 24)}) {
    auto fixed = prepare_image(dirty);
    ASSERT_TRUE(fixed.ok()) << fixed.status().message();
    EXPECT_TRUE(fixed->reencoded);
    EXPECT_EQ(fixed->height, 16);
    EXPECT_EQ(fixed->width, 24);
    auto header = read_jpeg_header(fixed->encoded);
    ASSERT_TRUE(header.ok());
    EXPECT_EQ(header->components, 3);
    EXPECT_FALSE(header->is_cmyk);
  }
  auto gray_kept = prepare_image(gray_jpeg(8, 8), /*reencode_grayscale=*/false);
  ASSERT_TRUE(gray_kept.ok());
  EXPECT_FALSE(gray_kept->reencoded);

  EXPECT_FALSE(prepare_image("GIF89a").ok());
  EXPECT_FALSE(prepare_image(plain.substr(0, plain.size() / 2)).ok());  // truncated JPEG
}

TEST_F(ConverterTest, ConvertsEndToEnd) {
  std::vector<std::string> log;
  ConverterOptions o = options();
  o.log = [&](const std::string& line) { log.push_back(line); };
  auto summary = convert_imagenet(o);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->train.images, 13);
  EXPECT_EQ(summary->train.written, 12);
  EXPECT_EQ(summary->train.reencoded, 3);
  EXPECT_EQ(summary->train.skipped, 1);
  ASSERT_EQ(summary->train.skipped_images.size(), 1u);
  EXPECT_NE(summary->train.skipped_images[0].find("n01_broken.JPEG"), std::string::npos);
  EXPECT_EQ(summary->validation.written, 4);
  EXPECT_EQ(summary->validation.skipped, 0);
  EXPECT_EQ(format_summary(summary->train),
            "train: 13 images, 3 shards (0 resumed): 12 written, 3 re-encoded, 1 skipped");
  bool reported = false;
  for (const auto& line : log) reported |= line.find("n01_broken.JPEG") != std::string::npos;
  EXPECT_TRUE(reported);

  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(out_)) files.insert(entry.path().filename());
  const std::set<std::string> want{"train-00000-of-00003", "train-00001-of-00003",
                                   "train-00002-of-00003", "validation-00000-of-00002",
                                   "validation-00001-of-00002"};
  EXPECT_EQ(files, want);  // no temporary files left

  const auto train = read_split("train", 3);
  ASSERT_EQ(train.size(), 12u);
  const std::map<std::string, int64_t> labels{{"n01", 1}, {"n02", 2}, {"n03", 3}};
  int reencoded_seen = 0;
  for (const auto& e : train) {
    EXPECT_EQ(e.label, labels.at(e.synset)) << e.filename;
    EXPECT_EQ(e.filename.substr(0, 3), e.synset);
    EXPECT_EQ(e.format, "JPEG");
    EXPECT_EQ(e.colorspace, "RGB");
    EXPECT_EQ(e.channels, 3);
    EXPECT_TRUE(e.text.empty());
    EXPECT_TRUE(e.bbox_xmin.empty());
    auto header = read_jpeg_header(e.encoded);
    ASSERT_TRUE(header.ok()) << e.filename;
    EXPECT_EQ(header->components, 3) << e.filename;
    EXPECT_EQ(header->height, e.height);
    EXPECT_EQ(header->width, e.width);
    if (e.filename == "n02_cmyk.JPEG" || e.filename == "n02_png.JPEG" ||
        e.filename == "n02_gray.JPEG") {
      ++reencoded_seen;
      auto decoded = decode_image(e.encoded);
      ASSERT_TRUE(decoded.ok());
    } else {
      EXPECT_EQ(e.encoded, testing::read_file(raw_ / "train" / e.synset / e.filename));
    }
  }
  EXPECT_EQ(reencoded_seen, 3);

  const auto validation = read_split("validation", 2);
  ASSERT_EQ(validation.size(), 4u);
  const int64_t want_val[] = {2, 4, 1, 4};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(validation[i].label, want_val[i]);  // sorted file order is kept
    EXPECT_EQ(validation[i].height, 24);
  }
}

TEST_F(ConverterTest, ResumeKeepsCompleteShardsAndRewritesMissingOnes) {
  ASSERT_TRUE(convert_imagenet(options()).ok());
  const fs::path shard1 = out_ / "train-00001-of-00003";
  const std::string before = testing::read_file(shard1);
  fs::remove(shard1);
  write_file(out_ / "train-00001-of-00003.tmp-99999", "half a shard from a killed run");
  // A kept shard is not rewritten: its modification time stays.
  const auto kept_time = fs::last_write_time(out_ / "train-00000-of-00003");

  ConverterOptions o = options();
  o.resume = true;
  auto summary = convert_imagenet(o);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->train.shards_resumed, 2);
  EXPECT_EQ(summary->validation.shards_resumed, 2);
  EXPECT_EQ(summary->validation.written, 0);
  EXPECT_EQ(testing::read_file(shard1), before);  // same seed, same order, same bytes
  EXPECT_EQ(fs::last_write_time(out_ / "train-00000-of-00003"), kept_time);
  EXPECT_FALSE(fs::exists(out_ / "train-00001-of-00003.tmp-99999"));
  const int64_t written = summary->train.written + summary->train.skipped;
  const ShardRange r = shard_range(13, 3, 1);
  EXPECT_EQ(written, r.end - r.begin);
}

// A JPEG whose header is cut inside its Huffman tables makes libjpeg fail mid-header; the
// images converted after it on the same thread must not be affected.
TEST_F(ConverterTest, CorruptJpegHeaderDoesNotSpoilLaterImages) {
  const std::string plain = *encode_jpeg(colour_image(10, 12, 1), 90);
  for (int i = 0; i < 3; ++i) {
    write_file(raw_ / "train" / "n03" / ("n03_cut" + std::to_string(i) + ".JPEG"),
               plain.substr(0, plain.size() / 2));
  }
  ConverterOptions o = options(1, 1);
  o.num_threads = 1;
  auto summary = convert_imagenet(o);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->train.skipped, 4);  // the three cut files and the text file
  EXPECT_EQ(summary->train.written, 12);
  EXPECT_EQ(summary->validation.written, 4);
}

TEST_F(ConverterTest, BadShardCountsAreRejected) {
  auto summary = convert_imagenet(options(0, 2));
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("train_shards"), std::string::npos);
}

// The real tool, through the environment CTest sets.
TEST_F(ConverterTest, ToolRunsAndRejectsUnknownFlags) {
  const char* bin_dir = std::getenv("IC_TEST_BIN_DIR");
  if (!bin_dir || !fs::exists(fs::path(bin_dir) / "imagenet_to_tfrecord")) {
    GTEST_SKIP() << "IC_TEST_BIN_DIR/imagenet_to_tfrecord not built";
  }
  const std::string tool = (fs::path(bin_dir) / "imagenet_to_tfrecord").string();
  const std::string log = (root_ / "log.txt").string();
  const std::string cmd =
      tool + " --raw_data_dir=" + raw_.string() + " --local_scratch_dir=" + out_.string() +
      " --train_shards=2 --validation_shards=1 --num_threads=2 > " + log + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::read_file(log);
  const std::string output = testing::read_file(log);
  EXPECT_NE(output.find("train: 13 images, 2 shards (0 resumed): 12 written, 3 re-encoded, "
                        "1 skipped"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("n01_broken.JPEG"), std::string::npos) << output;
  EXPECT_EQ(read_split("train", 2).size(), 12u);
  EXPECT_EQ(read_split("validation", 1).size(), 4u);
  EXPECT_NE(std::system((tool + " --no_such_flag=1 > " + log + " 2>&1").c_str()), 0);
  EXPECT_NE(std::system((tool + " > " + log + " 2>&1").c_str()), 0);  // required flags missing
}

}  // namespace
}  // namespace ic
