// The trainer and the evaluator over TFRecord shards damaged in the middle (a flipped length, a
// record cut short, a length claiming gigabytes): training reads on after the damage and names
// the file, offset and bytes skipped; evaluation stops naming them unless told to skip, and then
// says how many records it evaluated of how many the files hold. Also a shuffle buffer far
// larger than the data set, which the files' record count bounds.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "io/tfrecord.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::TempDir;
using testing::ToolOutput;

ToolOutput run_trainer(const std::string& args) {
  return testing::run_command("timeout 300 " + testing::bin_path("inception_v3") + " " + args);
}

std::string tiny_flags(const std::string& data_dir, const std::string& model_dir) {
  return "--data_dir=" + data_dir + " --model_dir=" + model_dir +
         " --use_tpu=False --num_threads=1 --iterations=2 --train_batch_size=2 "
         "--eval_batch_size=2 --width=75 --height=75 --depth_multiplier=0.1 --num_classes=11 "
         "--save_checkpoints_secs=0 --num_parallel_calls=1 ";
}

void make_data(const std::string& dir) {
  ToolOutput made = testing::run_tool("make_fake_imagenet",
                                      "--output_dir=" + dir +
                                          " --num_train_images=16 --num_validation_images=8 "
                                          "--train_shards=2 --validation_shards=1 --image_size=40 "
                                          "--num_classes=10 --num_threads=1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
uint64_t get_u64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}
// Where each record of a clean file starts.
std::vector<size_t> record_starts(const std::string& bytes) {
  std::vector<size_t> starts;
  for (size_t at = 0; at + 16 <= bytes.size(); at += 16 + get_u64(bytes, at)) starts.push_back(at);
  return starts;
}

enum class Damage { flipped_length, cut_record, huge_length };
const char* name_of(Damage d) {
  switch (d) {
    case Damage::flipped_length: return "flipped length";
    case Damage::cut_record: return "cut record";
    case Damage::huge_length: return "huge length";
  }
  return "";
}

// Damages record `index` of the file; returns its offset and the offset where the next valid
// record then starts.
std::pair<size_t, size_t> damage(const std::string& path, size_t index, Damage kind) {
  std::string bytes = read_file(path);
  const std::vector<size_t> starts = record_starts(bytes);
  EXPECT_LT(index + 1, starts.size());
  const size_t at = starts[index];
  const size_t length = get_u64(bytes, at);
  size_t next = starts[index + 1];
  switch (kind) {
    case Damage::flipped_length: bytes[at] ^= 0x01; break;
    case Damage::cut_record:
      bytes.erase(at + 12 + length / 2, length / 2);
      next -= length / 2;
      break;
    case Damage::huge_length: {
      for (int i = 0; i < 8; ++i) bytes[at + i] = i == 4 ? 0x02 : 0;  // 2^33 bytes
      const uint32_t crc = mask_crc32c(crc32c(bytes.data() + at, 8));
      for (int i = 0; i < 4; ++i) bytes[at + 8 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
      break;
    }
  }
  write_file(path, bytes);
  return {at, next};
}

const Damage kDamages[] = {Damage::flipped_length, Damage::cut_record, Damage::huge_length};

TEST(DamagedShard, TrainingReadsOnAndNamesFileOffsetAndBytesSkipped) {
  for (const Damage kind : kDamages) {
    SCOPED_TRACE(name_of(kind));
    TempDir dir;
    make_data(dir.sub("data"));
    const std::string shard = dir.sub("data/train-00000-of-00002");
    const auto [at, next] = damage(shard, 3, kind);
    ToolOutput out = run_trainer("--mode=train --train_steps=4 --max_bad_input_fraction=0.5 " +
                                 tiny_flags(dir.sub("data"), dir.sub("model")));
    ASSERT_EQ(out.exit_code, 0) << out.output;
    EXPECT_TRUE(out.contains(shard + ": corrupt record at byte " + std::to_string(at)))
        << out.output;
    EXPECT_TRUE(out.contains("skipped " + std::to_string(next - at) +
                             " bytes to the next valid record at byte " + std::to_string(next)))
        << out.output;
    EXPECT_TRUE(out.contains(" bad of ")) << out.output;
  }
}

TEST(DamagedShard, EvaluationFailsByDefaultAndWithSkippingCountsWhatItEvaluated) {
  TempDir dir;
  ToolOutput trained = testing::train_tiny_model(dir.sub("model"), 2);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  for (const Damage kind : kDamages) {
    SCOPED_TRACE(name_of(kind));
    TempDir data;
    make_data(data.path());
    const std::string shard = data.sub("validation-00000-of-00001");
    const auto [at, next] = damage(shard, 3, kind);
    const std::string eval =
        "--mode=eval --train_steps=2 --eval_timeout=0 " + tiny_flags(data.path(), dir.sub("model"));
    ToolOutput strict = run_trainer(eval);
    EXPECT_NE(strict.exit_code, 0) << strict.output;
    EXPECT_TRUE(strict.contains(shard + ": corrupt record at byte " + std::to_string(at)))
        << strict.output;
    EXPECT_TRUE(strict.contains("--eval_skip_corrupt=true")) << strict.output;
    EXPECT_FALSE(strict.contains("Saving dict for global step")) << strict.output;

    ToolOutput skipping = run_trainer(eval + "--eval_skip_corrupt=true");
    ASSERT_EQ(skipping.exit_code, 0) << skipping.output;
    EXPECT_TRUE(skipping.contains("evaluated 7 of the 8 records the 1 validation files hold"))
        << skipping.output;
    EXPECT_TRUE(skipping.contains(shard + ": corrupt record at byte " + std::to_string(at)))
        << skipping.output;
    EXPECT_TRUE(skipping.contains("Saving dict for global step 2")) << skipping.output;
  }
}

TEST(DamagedShard, AnEvaluationOverCleanFilesSaysItEvaluatedEveryRecord) {
  TempDir dir;
  ToolOutput trained = testing::train_tiny_model(dir.sub("model"), 2);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  make_data(dir.sub("data"));
  ToolOutput out = run_trainer("--mode=eval --train_steps=2 --eval_timeout=0 " +
                               tiny_flags(dir.sub("data"), dir.sub("model")));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_TRUE(out.contains("evaluated 8 of the 8 records the 1 validation files hold"))
      << out.output;
}

TEST(DamagedShard, AShuffleBufferLargerThanTheDataIsBoundedByItsRecords) {
  TempDir dir;
  make_data(dir.sub("data"));
  ToolOutput out = run_trainer(
      "--mode=train --train_steps=4 "
      "--followup_shuffle_buffer_size=2000000000 " +
      tiny_flags(dir.sub("data"), dir.sub("model")));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_FALSE(out.contains("GB of memory")) << out.output;
  EXPECT_TRUE(out.contains("step = 4")) << out.output;
}

}  // namespace
}  // namespace ic
