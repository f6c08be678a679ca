// Hostile input to the input pipeline, the image codec and the converter: each case must give a
// clear error (or, in training, a counted skip), never a hang, a crash, an exception or a
// silently wrong result.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/example.h"
#include "data/fake_imagenet.h"
#include "data/image_codec.h"
#include "data/imagenet_converter.h"
#include "data/input_pipeline.h"
#include "data/preprocessing.h"
#include "io/tfrecord.h"
#include "proto/example.pb.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

class TempTree {
 public:
  TempTree() {
    path_ = fs::temp_directory_path() /
            ("ic_bad_input_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string sub(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::string small_jpeg(int height = 32, int width = 40) {
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.assign(static_cast<size_t>(height) * width * 3, 128);
  return *encode_jpeg(image, 90);
}

// A JPEG whose frame header (SOF0) claims height x width; the scan data stays the small one's.
std::string jpeg_claiming(int height, int width) {
  std::string bytes = small_jpeg();
  const size_t sof = bytes.find("\xFF\xC0");
  EXPECT_NE(sof, std::string::npos);
  // FF C0 | length (2) | precision (1) | height (2) | width (2)
  bytes[sof + 5] = static_cast<char>(height >> 8);
  bytes[sof + 6] = static_cast<char>(height & 0xff);
  bytes[sof + 7] = static_cast<char>(width >> 8);
  bytes[sof + 8] = static_cast<char>(width & 0xff);
  return bytes;
}

// A PNG whose IHDR claims height x width (a valid 60000x60000 PNG is ~10 MB; the header is
// all the check may read).
std::string png_claiming(uint32_t height, uint32_t width) {
  RgbImage image;
  image.height = 4;
  image.width = 4;
  image.pixels.assign(48, 7);
  std::string bytes = *encode_png(image);
  for (int i = 0; i < 4; ++i) {
    bytes[16 + i] = static_cast<char>(width >> (24 - 8 * i));
    bytes[20 + i] = static_cast<char>(height >> (24 - 8 * i));
  }
  return bytes;
}

std::string example_record(int64_t label, std::string encoded = small_jpeg()) {
  ImageExample example;
  example.encoded = std::move(encoded);
  example.label = label;
  example.filename = "img_label_" + std::to_string(label) + ".JPEG";
  return encode_image_example(example);
}

// The encoder leaves out negative labels (it writes none for -1); TensorFlow's converter or a
// hand-made record can hold any int64, so set it in the proto directly.
std::string with_label(const std::string& record, int64_t label) {
  tensorflow::Example example;
  EXPECT_TRUE(example.ParseFromString(record));
  auto& feature = (*example.mutable_features()->mutable_feature())["image/class/label"];
  feature.mutable_int64_list()->clear_value();
  feature.mutable_int64_list()->add_value(label);
  return example.SerializeAsString();
}

void write_shard(const std::string& path, const std::vector<std::string>& records) {
  Result<TfRecordWriter> writer = TfRecordWriter::create(path);
  ASSERT_TRUE(writer.ok());
  for (const std::string& r : records) ASSERT_TRUE(writer->write(r).ok());
  ASSERT_TRUE(writer->close().ok());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

InputOptions options_for(const std::string& dir, bool training, int64_t num_classes = 11) {
  InputOptions o;
  o.data_dir = dir;
  o.training = training;
  o.batch_size = 2;
  o.height = o.width = 16;
  o.num_threads = 2;
  o.shuffle_buffer = 4;
  o.num_classes = num_classes;
  return o;
}

// Pulls batches until an error or (eval) the end; a hang would time the test out.
Status drain(InputPipeline& pipeline, int max_batches = 50) {
  for (int i = 0; i < max_batches; ++i) {
    Result<std::shared_ptr<const Batch>> batch = pipeline.next();
    if (!batch.ok()) return batch.status();
    EXPECT_TRUE(*batch == nullptr || (*batch)->valid > 0);
    if (!*batch) return Status();
  }
  return Status();
}

// ---- labels ----------------------------------------------------------------------------------

TEST(BadLabels, OutOfRangeLabelsStopTrainingAndEvalNamingFileAndRecord) {
  for (const int64_t bad : {int64_t{50}, int64_t{11}, int64_t{-3}, int64_t{-1}}) {
    for (const bool training : {true, false}) {
      TempTree dir;
      const std::string shard =
          dir.sub(training ? "train-00000-of-00001" : "validation-00000-of-00001");
      // -1: no image/class/label at all (the parser's default)
      const std::string odd = bad == -1 ? example_record(-1) : with_label(example_record(0), bad);
      write_shard(shard, {example_record(3), odd, example_record(4)});
      auto pipeline = InputPipeline::create(options_for(dir.path(), training));
      ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
      const Status status = drain(**pipeline);
      ASSERT_FALSE(status.ok()) << "label " << bad << " training " << training;
      EXPECT_NE(status.message().find(shard), std::string::npos) << status.message();
      EXPECT_NE(status.message().find("record at byte "), std::string::npos) << status.message();
      EXPECT_NE(status.message().find("[0, 11)"), std::string::npos) << status.message();
      EXPECT_NE(status.message().find("label " + std::to_string(bad)), std::string::npos)
          << status.message();
    }
  }
}

TEST(BadLabels, InRangeLabelsPass) {
  TempTree dir;
  write_shard(dir.sub("validation-00000-of-00001"),
              {example_record(0), example_record(10), example_record(5)});
  auto pipeline = InputPipeline::create(options_for(dir.path(), false));
  ASSERT_TRUE(pipeline.ok());
  EXPECT_TRUE(drain(**pipeline).ok());
}

// ---- training input that can never give a record must not hang ----------------------------

TEST(UnreadableTraining, EmptyNonTfRecordOrAllBadCrcShardsStopWithAnError) {
  std::string corrupt = frame_tfrecord(example_record(1)) + frame_tfrecord(example_record(2));
  corrupt[corrupt.size() - 1] ^= 0x55;                            // 2nd data CRC
  corrupt[frame_tfrecord(example_record(1)).size() - 1] ^= 0x55;  // 1st data CRC
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"empty", ""},
      {"not a TFRecord", "this is not a tfrecord file at all, just text\n"},
      {"bad CRC in every record", corrupt}};
  for (const auto& [what, bytes] : cases) {
    TempTree dir;
    write_bytes(dir.sub("train-00000-of-00002"), bytes);
    write_bytes(dir.sub("train-00001-of-00002"), bytes);
    auto pipeline = InputPipeline::create(options_for(dir.path(), true));
    ASSERT_TRUE(pipeline.ok()) << what << ": " << pipeline.status().message();
    const Status status = drain(**pipeline);
    ASSERT_FALSE(status.ok()) << what;
    EXPECT_NE(status.message().find("none of the 2 input files holds a readable record"),
              std::string::npos)
        << what << ": " << status.message();
  }
}

TEST(UnreadableTraining, OneGoodShardAmongBadOnesKeepsTraining) {
  TempTree dir;
  write_bytes(dir.sub("train-00000-of-00003"), "");
  write_shard(dir.sub("train-00001-of-00003"), {example_record(1), example_record(2)});
  write_bytes(dir.sub("train-00002-of-00003"), "garbage garbage garbage garbage");
  auto pipeline = InputPipeline::create(options_for(dir.path(), true));
  ASSERT_TRUE(pipeline.ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*pipeline)->next().ok());
  EXPECT_GT((*pipeline)->stats().corrupt_records_skipped, 0);
  EXPECT_GT((*pipeline)->stats().inputs, (*pipeline)->stats().records);
}

// ---- files that are not files -------------------------------------------------------------

TEST(InputFiles, SymlinkLoopOrDirectoryShardIsAnErrorNamingIt) {
  TempTree dir;
  write_shard(dir.sub("train-00000-of-00002"), {example_record(1)});
  fs::create_symlink(dir.sub("train-00001-of-00002"), dir.sub("train-00001-of-00002"));
  auto files = list_input_files(dir.path(), true, 0, 1);
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("train-00001-of-00002"), std::string::npos)
      << files.status().message();

  TempTree other;
  fs::create_directories(other.sub("validation-00000-of-00001"));
  auto listed = list_input_files(other.path(), false, 0, 1);
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("not a regular file"), std::string::npos)
      << listed.status().message();
}

// ---- images that claim huge dimensions ------------------------------------------------------

TEST(HugeImages, HeaderDimensionsAreReadAndCheckedBeforeDecoding) {
  auto jpeg = read_image_dimensions(jpeg_claiming(60000, 60000));
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().message();
  EXPECT_EQ(jpeg->height, 60000);
  EXPECT_EQ(jpeg->pixels(), int64_t{3600000000});
  auto png = read_image_dimensions(png_claiming(60000, 50000));
  ASSERT_TRUE(png.ok()) << png.status().message();
  EXPECT_EQ(png->height, 60000);
  EXPECT_EQ(png->width, 50000);

  const Status refused = check_image_pixels(jpeg_claiming(60000, 60000), kDefaultMaxImagePixels);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("60000x60000"), std::string::npos) << refused.message();
  EXPECT_TRUE(check_image_pixels(small_jpeg(), kDefaultMaxImagePixels).ok());
  EXPECT_FALSE(check_image_pixels(small_jpeg(32, 40), 32 * 40 - 1).ok());
}

TEST(HugeImages, PreprocessingRefusesThemForEveryKind) {
  for (const std::string& bytes : {jpeg_claiming(60000, 60000), png_claiming(60000, 60000)}) {
    for (const bool training : {true, false}) {
      PreprocessOptions options;
      options.training = training;
      options.height = options.width = 16;
      Rng rng(1);
      PreprocessScratch scratch;
      std::vector<float> out(16 * 16 * 3);
      const Status status = preprocess_image(bytes, {}, options, rng, &scratch, out.data());
      ASSERT_FALSE(status.ok());
      EXPECT_NE(status.message().find("60000x60000"), std::string::npos) << status.message();
    }
  }
}

// A 65535x65535 header with the limit off: the crop arithmetic must not overflow (UBSan) on
// its way to the decode that then fails on the small scan data.
TEST(HugeImages, CropSamplingOfAHugeImageDoesNotOverflow) {
  Rng rng(5);
  DistortedBoxOptions box;
  for (int i = 0; i < 50; ++i) {
    auto crop = sample_distorted_bounding_box(65535, 65535, {}, box, rng);
    ASSERT_TRUE(crop.ok());
    EXPECT_GT(crop->height, 0);
    EXPECT_LE(int64_t{crop->height} + crop->y, 65535);
  }
}

// With the limit off, the whole preprocessing arithmetic runs on the 60000x60000 claim: no
// signed overflow on the way (UBSan). (The small image's scan data ends early, which the
// decoders now refuse as damaged; the arithmetic before the decode is what runs here.)
TEST(HugeImages, WithTheLimitOffPreprocessingArithmeticDoesNotOverflow) {
  for (const bool training : {true, false}) {
    PreprocessOptions options;
    options.training = training;
    options.height = options.width = 16;
    options.max_pixels = 0;
    Rng rng(2);
    PreprocessScratch scratch;
    std::vector<float> out(16 * 16 * 3);
    PreprocessTrace trace;
    const Status status = preprocess_image(jpeg_claiming(60000, 60000), {}, options, rng, &scratch,
                                           out.data(), &trace);
    if (status.ok()) {
      EXPECT_GT(int64_t{trace.crop.height} * trace.crop.width, 0);
      EXPECT_EQ(trace.scale_denom, 8);  // decoded at 1/8: 7500x7500 at most, not 60000x60000
    }
  }
}

TEST(HugeImages, TrainingCountsThemAsUndecodableAndGoesOn) {
  TempTree dir;
  // Two bad of eight with batches of four: no batch is all bad (that is an error of its own).
  write_shard(dir.sub("train-00000-of-00001"),
              {example_record(1), example_record(2, png_claiming(60000, 60000)), example_record(3),
               example_record(4, jpeg_claiming(60000, 60000)), example_record(5), example_record(6),
               example_record(7), example_record(8)});
  InputOptions options = options_for(dir.path(), true);
  options.batch_size = 4;
  options.num_files_infeed = 1;  // one pass after another, not the same file 8 times at once
  auto pipeline = InputPipeline::create(options);
  ASSERT_TRUE(pipeline.ok());
  for (int i = 0; i < 6; ++i) {
    auto batch = (*pipeline)->next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
  }
  const InputPipeline::Stats stats = (*pipeline)->stats();
  EXPECT_GT(stats.undecodable_images_skipped, 0);
  ASSERT_FALSE(stats.undecodable_examples.empty());
  EXPECT_NE(stats.undecodable_examples.front().find("60000x60000"), std::string::npos)
      << stats.undecodable_examples.front();
}

// A single training file read with the default interleave (more files open at once than there
// are) and its undecodable images last: every pass reaches them, with the bounded shuffle buffer
// or none, so they are counted as they would be anywhere else in the file.
TEST(HugeImages, TrainingCountsThemWhenTheyAreTheLastRecordsOfTheOnlyFile) {
  TempTree dir;
  std::vector<std::string> records;
  for (int label = 1; label <= 14; ++label) records.push_back(example_record(label % 11));
  records.push_back(example_record(1, png_claiming(60000, 60000)));
  records.push_back(example_record(2, jpeg_claiming(60000, 60000)));
  write_shard(dir.sub("train-00000-of-00001"), records);
  for (const int shuffle_buffer : {0, 1000}) {
    InputOptions options = options_for(dir.path(), true);
    options.batch_size = 4;
    options.shuffle_buffer = shuffle_buffer;
    ASSERT_GT(options.num_files_infeed, 1);
    auto pipeline = InputPipeline::create(options);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
    // Twenty batches are five passes over the sixteen records.
    for (int i = 0; i < 20; ++i) {
      auto batch = (*pipeline)->next();
      ASSERT_TRUE(batch.ok()) << batch.status().message();
    }
    const InputPipeline::Stats stats = (*pipeline)->stats();
    EXPECT_GE(stats.undecodable_images_skipped, 6) << "shuffle buffer " << shuffle_buffer;
    bool named_png = false, named_jpeg = false;
    for (const std::string& example : stats.undecodable_examples) {
      named_png = named_png || example.find("img_label_1.JPEG") != std::string::npos;
      named_jpeg = named_jpeg || example.find("img_label_2.JPEG") != std::string::npos;
    }
    EXPECT_TRUE(named_png && named_jpeg) << "shuffle buffer " << shuffle_buffer;
  }
}

TEST(HugeImages, TheConverterRefusesThem) {
  for (const std::string& bytes : {jpeg_claiming(60000, 60000), png_claiming(60000, 60000)}) {
    auto prepared = prepare_image(bytes);
    ASSERT_FALSE(prepared.ok());
    EXPECT_NE(prepared.status().message().find("60000x60000"), std::string::npos);
  }
  EXPECT_TRUE(prepare_image(small_jpeg()).ok());
}

TEST(ConverterTree, SymlinkLoopsAreErrorsNotExceptions) {
  {  // a looping file among the images
    TempTree raw;
    fs::create_directories(raw.sub("train/n01"));
    write_bytes(raw.sub("train/n01/a.JPEG"), small_jpeg());
    fs::create_symlink(raw.sub("train/n01/loop.JPEG"), raw.sub("train/n01/loop.JPEG"));
    auto listed = list_raw_imagenet(raw.path(), 0);
    ASSERT_FALSE(listed.ok());
    EXPECT_NE(listed.status().message().find("loop.JPEG"), std::string::npos)
        << listed.status().message();
  }
  {  // a looping folder as a synset, and as the validation folder
    TempTree raw;
    fs::create_directories(raw.sub("train/n01"));
    write_bytes(raw.sub("train/n01/a.JPEG"), small_jpeg());
    fs::create_symlink(raw.sub("train/n02"), raw.sub("train/n02"));
    auto listed = list_raw_imagenet(raw.path(), 0);
    ASSERT_FALSE(listed.ok());
    EXPECT_NE(listed.status().message().find("n02"), std::string::npos)
        << listed.status().message();
    fs::remove(raw.sub("train/n02"));
    fs::create_symlink(raw.sub("validation"), raw.sub("validation"));
    auto again = list_raw_imagenet(raw.path(), 0);
    ASSERT_FALSE(again.ok());
    EXPECT_NE(again.status().message().find("validation"), std::string::npos)
        << again.status().message();
  }
}

TEST(HugeImages, FakeImageNetRefusesSizesTheReadersWouldRefuse) {
  TempTree dir;
  FakeImageNetOptions options;
  options.output_dir = dir.path();
  options.num_train_images = 1;
  options.num_validation_images = 1;
  options.train_shards = options.validation_shards = 1;
  options.image_size = 70000;  // 14.7 GB of pixels per image
  const Status status = make_fake_imagenet(options);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("70000x70000"), std::string::npos) << status.message();
}

// ---- memory -----------------------------------------------------------------------------------

TEST(ShuffleBufferMemory, ABufferBeyondTheMemoryLimitIsRefusedWithFigures) {
  TempTree dir;
  write_shard(dir.sub("train-00000-of-00001"), {example_record(1), example_record(2)});
  InputOptions options = options_for(dir.path(), true);
  options.shuffle_buffer = 2000000000;
  // Less memory than even the two records the buffer can hold.
  options.memory_limit_bytes = 64;
  auto pipeline = InputPipeline::create(options);
  ASSERT_FALSE(pipeline.ok());
  EXPECT_NE(pipeline.status().message().find("shuffle buffer of 2000000000 records (bounded by "
                                             "the 2 records the input files hold) needs about"),
            std::string::npos)
      << pipeline.status().message();
  options.memory_limit_bytes = uint64_t{16} << 30;
  options.shuffle_buffer = 1000;
  EXPECT_TRUE(InputPipeline::create(options).ok());
}

// A buffer larger than the data set is bounded by its records, not refused for the memory the
// flag's size would need.
TEST(ShuffleBufferMemory, ABufferLargerThanTheDataIsBoundedByItsRecords) {
  TempTree dir;
  write_shard(dir.sub("train-00000-of-00001"), {example_record(1), example_record(2)});
  InputOptions options = options_for(dir.path(), true);
  options.shuffle_buffer = 2000000000;
  options.memory_limit_bytes = uint64_t{16} << 30;
  auto pipeline = InputPipeline::create(options);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  for (int i = 0; i < 3; ++i) {
    auto batch = (*pipeline)->next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    ASSERT_TRUE(*batch);
  }
  // The position lists the buffered records: never more than the two the file holds.
  EXPECT_LE((*pipeline)->position().stream.buffer.size(), 2u);
}

}  // namespace
}  // namespace ic
