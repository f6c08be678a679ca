// Resuming the training input stream exactly: a pipeline created from another's position()
// hands out bit-identical batches to the ones the first would have handed out next, across the
// interleave, the shuffle buffer and epoch boundaries; positions that do not fit are refused.
#include "data/input_position.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "data/example.h"
#include "data/image_codec.h"
#include "data/input_pipeline.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

// `files` TFRecord shards of `per_file` small JPEG records; record k is labelled k and its
// pixels depend on k, so any change of order shows in the batches.
class Shards {
 public:
  Shards(int files, int per_file) {
    path_ = fs::temp_directory_path() / ("ic_position_test_" + std::to_string(::getpid()));
    fs::create_directories(path_);
    int id = 0;
    for (int f = 0; f < files; ++f) {
      Result<TfRecordWriter> writer =
          TfRecordWriter::create((path_ / ("train-0000" + std::to_string(f))).string());
      EXPECT_TRUE(writer.ok());
      for (int r = 0; r < per_file; ++r, ++id) {
        RgbImage image;
        image.height = 20 + id % 5;
        image.width = 24 + id % 3;
        image.pixels.resize(static_cast<size_t>(image.height) * image.width * 3);
        for (size_t i = 0; i < image.pixels.size(); ++i) {
          image.pixels[i] = static_cast<uint8_t>((id * 41 + i * 7) % 256);
        }
        ImageExample example;
        example.encoded = *encode_jpeg(image, 90);
        example.height = image.height;
        example.width = image.width;
        example.label = id;
        EXPECT_TRUE(writer->write(encode_image_example(example)).ok());
      }
      EXPECT_TRUE(writer->close().ok());
    }
  }
  ~Shards() { fs::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

InputOptions options_for(const std::string& dir) {
  InputOptions options;
  options.data_dir = dir;
  options.training = true;
  options.batch_size = 4;
  options.height = options.width = 16;
  options.num_threads = 3;
  options.num_files_infeed = 3;
  options.shuffle_buffer = 10;
  options.seed = 7;
  options.num_classes = 1000;
  return options;
}

struct Copy {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

std::vector<Copy> take_batches(InputPipeline& pipeline, int count) {
  std::vector<Copy> out;
  for (int i = 0; i < count; ++i) {
    Result<std::shared_ptr<const Batch>> batch = pipeline.next();
    EXPECT_TRUE(batch.ok() && *batch) << (batch.ok() ? "" : batch.status().message());
    if (!batch.ok() || !*batch) break;
    out.push_back(Copy{(*batch)->images, (*batch)->labels});
  }
  return out;
}

TEST(InputPosition, ResumedPipelineContinuesBitIdenticallyAcrossEpochs) {
  Shards shards(5, 7);  // 35 records: an epoch is under 9 batches of 4
  const InputOptions options = options_for(shards.path());
  constexpr int kTotal = 22;  // more than two epochs
  std::vector<Copy> straight;
  {
    auto pipeline = InputPipeline::create(options);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
    straight = take_batches(**pipeline, kTotal);
    ASSERT_EQ(straight.size(), static_cast<size_t>(kTotal));
  }
  for (int stop_after : {0, 1, 3, 8, 9, 13, 17}) {
    SCOPED_TRACE("stopped after " + std::to_string(stop_after) + " batches");
    std::string saved;
    {
      auto first = InputPipeline::create(options);
      ASSERT_TRUE(first.ok());
      std::vector<Copy> before = take_batches(**first, stop_after);
      for (int i = 0; i < stop_after; ++i) EXPECT_EQ(before[i].labels, straight[i].labels);
      saved = format_input_position((*first)->position());
    }  // its threads read ahead; they are stopped here
    Result<InputPosition> position = parse_input_position(saved, "test");
    ASSERT_TRUE(position.ok()) << position.status().message();
    EXPECT_EQ(format_input_position(*position), saved);
    auto resumed = InputPipeline::create(options, &*position);
    ASSERT_TRUE(resumed.ok()) << resumed.status().message();
    std::vector<Copy> after = take_batches(**resumed, kTotal - stop_after);
    ASSERT_EQ(after.size(), static_cast<size_t>(kTotal - stop_after));
    for (int i = 0; i < kTotal - stop_after; ++i) {
      EXPECT_EQ(after[i].labels, straight[stop_after + i].labels) << "batch " << stop_after + i;
      EXPECT_TRUE(after[i].images == straight[stop_after + i].images)
          << "images of batch " << stop_after + i;
    }
    // A position taken from the resumed pipeline is the straight pipeline's position too.
    EXPECT_EQ((*resumed)->position().stream_index, static_cast<uint64_t>(kTotal) * 4);
  }
}

TEST(InputPosition, AMovedDataDirResumesExactly) {
  // Files are named in a position without their folder: the same shards elsewhere resume.
  Shards shards(3, 5);
  const InputOptions options = options_for(shards.path());
  std::vector<Copy> straight;
  InputPosition position;
  {
    auto pipeline = InputPipeline::create(options);
    ASSERT_TRUE(pipeline.ok());
    straight = take_batches(**pipeline, 3);
    position = (*pipeline)->position();
    std::vector<Copy> more = take_batches(**pipeline, 4);
    straight.insert(straight.end(), more.begin(), more.end());
  }
  const std::string moved = shards.path() + "_moved";
  fs::copy(shards.path(), moved);
  InputOptions moved_options = options;
  moved_options.data_dir = moved;
  auto resumed = InputPipeline::create(moved_options, &position);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  std::vector<Copy> after = take_batches(**resumed, 4);
  fs::remove_all(moved);
  ASSERT_EQ(after.size(), 4u);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].labels, straight[3 + i].labels);
    EXPECT_TRUE(after[i].images == straight[3 + i].images);
  }
}

TEST(InputPosition, PositionOfAnotherStreamIsRefusedOrStartsFreshWithANotice) {
  Shards shards(3, 5);
  InputOptions options = options_for(shards.path());
  auto first = InputPipeline::create(options);
  ASSERT_TRUE(first.ok());
  take_batches(**first, 2);
  const InputPosition position = (*first)->position();
  options.shuffle_buffer = 6;
  auto refused = InputPipeline::create(options, &position);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("shuffle buffer 10 then, 6 now"), std::string::npos)
      << refused.status().message();
  std::string notice;
  auto fresh = InputPipeline::create(options, &position, &notice);
  ASSERT_TRUE(fresh.ok()) << fresh.status().message();
  EXPECT_NE(notice.find("starts afresh"), std::string::npos) << notice;
  EXPECT_EQ((*fresh)->position().stream_index, 0u);
}

TEST(InputPosition, OffsetsThatDoNotFitTheFilesAreAnErrorNamingTheFile) {
  Shards shards(3, 5);
  const InputOptions options = options_for(shards.path());
  auto first = InputPipeline::create(options);
  ASSERT_TRUE(first.ok());
  take_batches(**first, 2);
  InputPosition position = (*first)->position();
  ASSERT_FALSE(position.stream.buffer.empty());
  InputPosition past_end = position;
  past_end.stream.buffer[0].offset = 1u << 30;
  auto refused = InputPipeline::create(options, &past_end, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("train-0000"), std::string::npos);
  EXPECT_NE(refused.status().message().find("past the end"), std::string::npos)
      << refused.status().message();
  InputPosition mid_record = position;
  mid_record.stream.buffer[0].offset += 3;  // not a record start: the framing CRC fails
  auto damaged = InputPipeline::create(options, &mid_record, nullptr);
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find("no longer reads"), std::string::npos)
      << damaged.status().message();
}

TEST(InputPosition, DamagedTextIsAClearError) {
  InputPosition p;
  p.seed = 1;
  p.cycle_length = 2;
  p.shuffle_buffer = 4;
  p.batch_size = 2;
  p.file_names = {"train-0", "train-1"};
  p.stream.open_files = {{1, 40, 3}};
  p.stream.buffer = {{0, 0}, {1, 20}};
  p.stream.shuffle_rng = {1, 2, 3, 4};
  const std::string text = format_input_position(p);
  Result<InputPosition> back = parse_input_position(text, "ckpt");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(format_input_position(*back), text);
  for (const std::string& bad :
       {std::string(""), std::string("hello"), text.substr(0, text.size() / 2),
        std::string(text).replace(text.find("buffer 2"), 8, "buffer 9"),
        std::string(text).replace(text.find("\n1 40 3"), 7, "\n7 40 3"),
        std::string(text).replace(text.find("files 2"), 7, "files 999999999"),
        std::string(text).replace(text.find("input_done 0"), 12, "input_done 5")}) {
    Result<InputPosition> parsed = parse_input_position(bad, "ckpt");
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().message().rfind("ckpt: input position", 0), 0u)
        << parsed.status().message();
  }
}

}  // namespace
}  // namespace ic
