#include "data/input_pipeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "data/example.h"
#include "data/fake_input.h"
#include "data/image_codec.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

// The value of a Result that the test needs to be ok (move-only values included).
template <typename T>
T take(Result<T> result) {
  if (!result.ok()) ADD_FAILURE() << result.status().message();
  return std::move(result).value();
}

// A temporary directory of TFRecord shards: `files` files of `per_file` JPEG records each, the
// record with id k (0-based, across files) labelled k + 1 and coloured by k.
class ShardDir {
 public:
  ShardDir(const std::string& prefix, int files, int per_file) {
    path_ = fs::temp_directory_path() /
            ("ic_pipeline_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
    int id = 0;
    for (int f = 0; f < files; ++f) {
      char name[64];
      std::snprintf(name, sizeof(name), "%s-%05d-of-%05d", prefix.c_str(), f, files);
      TfRecordWriter writer = take(TfRecordWriter::create((path_ / name).string()));
      for (int r = 0; r < per_file; ++r, ++id) {
        EXPECT_TRUE(writer.write(record(id)).ok());
      }
      EXPECT_TRUE(writer.close().ok());
    }
  }
  ~ShardDir() { fs::remove_all(path_); }
  std::string path() const { return path_.string(); }

  static std::string record(int id, std::string encoded = "") {
    ImageExample example;
    if (encoded.empty()) {
      RgbImage image;
      image.height = 30 + id % 7;
      image.width = 40 + id % 5;
      image.pixels.resize(static_cast<size_t>(image.height) * image.width * 3);
      for (size_t i = 0; i < image.pixels.size(); ++i) {
        image.pixels[i] = static_cast<uint8_t>((id * 37 + i % 3 * 80 + i / 300) % 256);
      }
      encoded = *encode_jpeg(image, 90);
      example.height = image.height;
      example.width = image.width;
    }
    example.encoded = std::move(encoded);
    example.label = id + 1;
    example.filename = "image_" + std::to_string(id) + ".JPEG";
    return encode_image_example(example);
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

InputOptions small_options(const std::string& dir, bool training) {
  InputOptions options;
  options.data_dir = dir;
  options.training = training;
  options.batch_size = 4;
  options.height = options.width = 16;
  options.num_threads = 2;
  options.seed = 42;
  options.num_files_infeed = 2;
  options.shuffle_buffer = 10;
  return options;
}

// Every label of an eval epoch, padding (-1) excluded, plus the batch count.
std::multiset<int> eval_labels(const InputOptions& options, int* batches = nullptr,
                               InputPipeline::Stats* stats = nullptr) {
  std::multiset<int> labels;
  auto pipeline = InputPipeline::create(options);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status().message();
  if (!pipeline.ok()) return labels;
  int count = 0;
  while (true) {
    Result<std::shared_ptr<const Batch>> batch = (*pipeline)->next();
    EXPECT_TRUE(batch.ok()) << batch.status().message();
    if (!batch.ok() || *batch == nullptr) break;
    ++count;
    int64_t valid = 0;
    for (int32_t label : (*batch)->labels) {
      if (label >= 0) labels.insert(label), ++valid;
    }
    EXPECT_EQ(valid, (*batch)->valid);
  }
  if (batches) *batches = count;
  if (stats) *stats = (*pipeline)->stats();
  return labels;
}

std::multiset<int> range_labels(int first, int last) {
  std::multiset<int> labels;
  for (int i = first; i <= last; ++i) labels.insert(i);
  return labels;
}

TEST(InputPipeline, EvalSeesEveryRecordExactlyOncePaddingTheLastBatch) {
  ShardDir dir("validation", 3, 7);  // 21 records: batches of 4 -> 5 full + 1 with 1 valid
  InputOptions options = small_options(dir.path(), false);
  int batches = 0;
  EXPECT_EQ(eval_labels(options, &batches), range_labels(1, 21));
  EXPECT_EQ(batches, 6);
  options.max_eval_images = 10;
  std::multiset<int> limited = eval_labels(options, &batches);
  EXPECT_EQ(limited.size(), 10u);
  EXPECT_EQ(batches, 3);
}

TEST(InputPipeline, ShardsSplitFilesAcrossWorkers) {
  ShardDir dir("validation", 3, 5);
  InputOptions options = small_options(dir.path(), false);
  options.num_shards = 2;
  options.shard_index = 0;  // files 0 and 2
  std::multiset<int> first = eval_labels(options);
  options.shard_index = 1;  // file 1
  std::multiset<int> second = eval_labels(options);
  EXPECT_EQ(second, range_labels(6, 10));
  first.insert(second.begin(), second.end());
  EXPECT_EQ(first, range_labels(1, 15));
  // Fewer files than workers: worker 0 evaluates every file, the others nothing, so that the
  // workers together still see every image once. A training worker without a file is an error.
  options.num_shards = 4;
  options.shard_index = 0;
  EXPECT_EQ(eval_labels(options), range_labels(1, 15));
  options.shard_index = 3;
  EXPECT_TRUE(eval_labels(options).empty());
  ShardDir train_dir("train", 3, 5);
  InputOptions training = small_options(train_dir.path(), true);
  training.num_shards = 4;
  training.shard_index = 3;
  const auto none = InputPipeline::create(training);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("input shard 3 of 4"), std::string::npos)
      << none.status().message();
}

TEST(InputPipeline, SameSeedGivesSameBatchesWhateverTheThreadCount) {
  ShardDir dir("train", 3, 6);
  auto run = [&](uint64_t seed, int threads) {
    InputOptions options = small_options(dir.path(), true);
    options.seed = seed;
    options.num_threads = threads;
    auto pipeline = take(InputPipeline::create(options));
    std::vector<Batch> batches;
    for (int i = 0; i < 10; ++i) {  // > 2 epochs of 18 records
      Result<std::shared_ptr<const Batch>> batch = pipeline->next();
      EXPECT_TRUE(batch.ok() && *batch != nullptr);
      batches.push_back(**batch);
    }
    return batches;
  };
  const std::vector<Batch> a = run(5, 1), b = run(5, 3), c = run(6, 2);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].valid, 4);
    EXPECT_EQ(a[i].labels, b[i].labels) << "batch " << i;
    EXPECT_EQ(a[i].images, b[i].images) << "batch " << i;
    differs |= a[i].labels != c[i].labels || a[i].images != c[i].images;
    for (float v : a[i].images) ASSERT_TRUE(v >= -1.0f && v <= 1.0f);
  }
  EXPECT_TRUE(differs);
}

TEST(InputPipeline, TrainingRepeatsAndShufflesEveryRecordEachEpoch) {
  ShardDir dir("train", 2, 6);  // 12 records = 3 batches per epoch
  InputOptions options = small_options(dir.path(), true);
  options.shuffle_buffer = 1;  // no record shuffle: each 12 records are one pass over the files
  auto pipeline = take(InputPipeline::create(options));
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::multiset<int> labels;
    for (int i = 0; i < 3; ++i) {
      std::shared_ptr<const Batch> batch = *pipeline->next();
      labels.insert(batch->labels.begin(), batch->labels.end());
    }
    EXPECT_EQ(labels, range_labels(1, 12)) << "epoch " << epoch;
  }
}

TEST(InputPipeline, StopsCleanlyMidEpoch) {
  ShardDir dir("train", 2, 8);
  InputOptions options = small_options(dir.path(), true);
  options.num_threads = 3;
  { auto untouched = take(InputPipeline::create(options)); }  // destroyed while starting up
  std::shared_ptr<const Batch> kept;
  {
    auto pipeline = take(InputPipeline::create(options));
    kept = *pipeline->next();
    std::shared_ptr<const Batch> second = *pipeline->next();
    ASSERT_NE(second, nullptr);
  }  // destroyed with batches in flight and one still held
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->labels.size(), 4u);  // still readable after the pipeline is gone
}

TEST(InputPipeline, CorruptRecordsAndUndecodableImagesAreCountedAndSkipped) {
  ShardDir dir("validation", 1, 3);  // records 1..3
  // A second file: a good record, an undecodable image, a record with a corrupted CRC, a good one.
  const std::string bad_path = dir.path() + "/validation-00001-of-00002";
  {
    TfRecordWriter writer = take(TfRecordWriter::create(bad_path));
    ASSERT_TRUE(writer.write(ShardDir::record(10)).ok());
    ASSERT_TRUE(writer.write(ShardDir::record(11, "not a jpeg at all")).ok());
    ASSERT_TRUE(writer.write(ShardDir::record(12)).ok());
    ASSERT_TRUE(writer.write(ShardDir::record(13)).ok());
    ASSERT_TRUE(writer.close().ok());
  }
  {
    // Flip a byte inside record 12's data (its offset: after the first two records).
    std::fstream file(bad_path, std::ios::in | std::ios::out | std::ios::binary);
    const size_t offset = ShardDir::record(10).size() + 16 +
                          ShardDir::record(11, "not a jpeg at all").size() + 16 + 12 + 40;
    file.seekg(static_cast<std::streamoff>(offset));
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5A);
    file.seekp(static_cast<std::streamoff>(offset));
    file.write(&byte, 1);
  }
  InputOptions options = small_options(dir.path(), false);
  options.num_files_infeed = 1;
  InputPipeline::Stats stats;
  const std::multiset<int> labels = eval_labels(options, nullptr, &stats);
  EXPECT_EQ(labels, (std::multiset<int>{1, 2, 3, 11, 14}));
  EXPECT_EQ(stats.corrupt_records_skipped, 1);
  EXPECT_EQ(stats.undecodable_images_skipped, 1);
  ASSERT_EQ(stats.undecodable_examples.size(), 1u);
  EXPECT_NE(stats.undecodable_examples[0].find("image_11.JPEG"), std::string::npos);
  EXPECT_NE(stats.undecodable_examples[0].find("validation-00001-of-00002"), std::string::npos);

  // Without skipping, the corrupt record is an error that names the file.
  options.skip_corrupt_records = false;
  auto pipeline = take(InputPipeline::create(options));
  Status failure;
  while (true) {
    Result<std::shared_ptr<const Batch>> batch = pipeline->next();
    if (!batch.ok()) {
      failure = batch.status();
      break;
    }
    ASSERT_NE(*batch, nullptr) << "the epoch ended without reporting the corrupt record";
  }
  EXPECT_NE(failure.message().find("validation-00001-of-00002"), std::string::npos)
      << failure.message();
}

TEST(InputPipeline, TrainingBatchesStayFullWhenAnImageFails) {
  ShardDir dir("train", 1, 3);
  {
    TfRecordWriter writer = take(TfRecordWriter::create(dir.path() + "/train-00001-of-00002"));
    ASSERT_TRUE(writer.write(ShardDir::record(20, "garbage")).ok());
    ASSERT_TRUE(writer.close().ok());
  }
  auto pipeline = take(InputPipeline::create(small_options(dir.path(), true)));
  for (int i = 0; i < 4; ++i) {
    std::shared_ptr<const Batch> batch = *pipeline->next();
    EXPECT_EQ(batch->valid, 4);
    for (int32_t label : batch->labels) EXPECT_TRUE(label >= 1 && label <= 3) << label;
  }
  EXPECT_GE(pipeline->stats().undecodable_images_skipped, 1);
}

TEST(InputPipeline, MissingFilesAreAnError) {
  InputOptions options = small_options("/nonexistent/ic_data_dir", true);
  Result<std::unique_ptr<InputPipeline>> pipeline = InputPipeline::create(options);
  ASSERT_FALSE(pipeline.ok());
  EXPECT_NE(pipeline.status().message().find("/nonexistent/ic_data_dir"), std::string::npos);
}

TEST(FakeInput, ImagesInUnitRangeAndLabelsBelow999) {
  FakeInputOptions options;
  options.batch_size = 5;
  options.height = options.width = 8;
  FakeInput fake(options);
  std::shared_ptr<const Batch> batch = *fake.next();
  EXPECT_EQ(batch->valid, 5);
  EXPECT_EQ(batch->images.size(), 5u * 8 * 8 * 3);
  for (float v : batch->images) ASSERT_TRUE(v >= -1.0f && v < 1.0f);
  for (int32_t label : batch->labels) EXPECT_TRUE(label >= 0 && label < 999);
  EXPECT_EQ(*fake.next(), batch);  // made once
}

}  // namespace
}  // namespace ic
