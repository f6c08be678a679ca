#include "io/checkpoint_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ic {
namespace {

namespace fs = std::filesystem;

class CheckpointDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("ic_ckptdir_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A checkpoint whose weights encode the step, so a read-back can tell saves apart.
  Status save(int64_t step, int keep_max = 5) {
    weights_ = {static_cast<float>(step), 0.5f, -1.0f};
    step_ = step;
    return save_checkpoint(
        dir_, step, {{"model", "inception_v3"}, {"num_classes", "1001"}},
        {{"InceptionV3/Logits/Conv2d_1c_1x1/biases", DType::f32, Shape{3}, weights_.data()},
         {"global_step", DType::i64, Shape{}, &step_}},
        keep_max);
  }
  std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::string read_text(const std::string& name) const {
    std::ifstream in(file(name), std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void write_text(const std::string& name, const std::string& text) const {
    std::ofstream out(file(name), std::ios::binary | std::ios::trunc);
    out << text;
  }
  std::string latest() const {
    Result<std::optional<std::string>> r = latest_checkpoint(dir_);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() && r->has_value() ? **r : "";
  }

  std::string dir_;
  std::vector<float> weights_;
  int64_t step_ = 0;
};

TEST(CheckpointNames, PathAndStep) {
  EXPECT_EQ(checkpoint_path("/m", 1200), "/m/model.ckpt-1200.safetensors");
  EXPECT_EQ(checkpoint_path("/m/", 0), "/m/model.ckpt-0.safetensors");
  EXPECT_EQ(checkpoint_step("/m/model.ckpt-1200.safetensors"), 1200);
  EXPECT_EQ(checkpoint_step("model.ckpt-1200"), 1200);
  EXPECT_EQ(checkpoint_step("gs://b/run-3/model.ckpt-250000"), 250000);
  EXPECT_EQ(checkpoint_step("model.ckpt-"), std::nullopt);
  EXPECT_EQ(checkpoint_step("model.ckpt"), std::nullopt);
  EXPECT_EQ(checkpoint_step("model.ckpt-12a"), std::nullopt);
  EXPECT_EQ(checkpoint_step("model.ckpt-12.index"), std::nullopt);
  EXPECT_EQ(checkpoint_step("model.ckpt-99999999999999999999"), std::nullopt);
}

TEST_F(CheckpointDirTest, FreshDirectoryHasNoCheckpoint) {
  Result<std::optional<std::string>> r = latest_checkpoint(dir_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->has_value());
}

TEST_F(CheckpointDirTest, SaveWritesTheIndexExactlyAsTensorFlow) {
  ASSERT_TRUE(save(0).ok());
  ASSERT_TRUE(save(1200).ok());
  EXPECT_EQ(read_text("checkpoint"),
            "model_checkpoint_path: \"model.ckpt-1200\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-0\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-1200\"\n");
  EXPECT_EQ(latest(), file("model.ckpt-1200.safetensors"));
  Result<SafetensorsFile> back = read_safetensors(latest());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->metadata.at("model"), "inception_v3");
  float first;
  std::memcpy(&first, back->find("InceptionV3/Logits/Conv2d_1c_1x1/biases")->bytes.data(), 4);
  EXPECT_EQ(first, 1200.0f);
  int64_t step;
  std::memcpy(&step, back->find("global_step")->bytes.data(), 8);
  EXPECT_EQ(step, 1200);
}

TEST_F(CheckpointDirTest, PrunesAllButTheNewestKeepMax) {
  for (int64_t step : {100, 200, 300, 400, 500}) ASSERT_TRUE(save(step, /*keep_max=*/3).ok());
  EXPECT_FALSE(fs::exists(file("model.ckpt-100.safetensors")));
  EXPECT_FALSE(fs::exists(file("model.ckpt-200.safetensors")));
  for (const char* kept :
       {"model.ckpt-300.safetensors", "model.ckpt-400.safetensors", "model.ckpt-500.safetensors"}) {
    EXPECT_TRUE(fs::exists(file(kept))) << kept;
  }
  EXPECT_EQ(read_text("checkpoint"),
            "model_checkpoint_path: \"model.ckpt-500\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-300\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-400\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-500\"\n");
  // Only the checkpoints and the index remain.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 4);
}

TEST_F(CheckpointDirTest, PruningContinuesAcrossARestart) {
  // The list lives in `checkpoint`, so a new process keeps pruning the old run's files.
  for (int64_t step : {1, 2}) ASSERT_TRUE(save(step, 2).ok());
  ASSERT_TRUE(save(3, 2).ok());
  EXPECT_FALSE(fs::exists(file("model.ckpt-1.safetensors")));
  EXPECT_TRUE(fs::exists(file("model.ckpt-2.safetensors")));
}

TEST_F(CheckpointDirTest, KeepMaxZeroKeepsEveryFileAndListsTheNewest) {
  for (int64_t step : {1, 2, 3}) ASSERT_TRUE(save(step, 0).ok());
  for (int64_t step : {1, 2, 3}) EXPECT_TRUE(fs::exists(checkpoint_path(dir_, step)));
  EXPECT_EQ(read_text("checkpoint"),
            "model_checkpoint_path: \"model.ckpt-3\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-3\"\n");
}

TEST_F(CheckpointDirTest, SavingAStepAgainMovesItToTheEnd) {
  for (int64_t step : {10, 20, 10}) ASSERT_TRUE(save(step).ok());
  EXPECT_EQ(read_text("checkpoint"),
            "model_checkpoint_path: \"model.ckpt-10\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-20\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-10\"\n");
}

TEST_F(CheckpointDirTest, InterruptedSaveLeavesThePreviousCheckpointValid) {
  ASSERT_TRUE(save(100).ok());
  const std::string good = checkpoint_path(dir_, 100);
  // A save of step 200 killed mid-write: a half-written temp file, and (a worse crash, or a
  // copy by hand) a truncated file under the final name that `checkpoint` does not name; and a
  // `checkpoint` rewrite killed before its rename.
  const std::string bytes = [&] {
    std::ifstream in(good, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  write_text("model.ckpt-200.safetensors.tmp-4242-0", bytes.substr(0, bytes.size() / 2));
  write_text("model.ckpt-200.safetensors", bytes.substr(0, bytes.size() - 3));
  write_text("checkpoint.tmp-4242-1", "model_checkpoint_path: \"model.ckpt-2");

  EXPECT_EQ(latest(), good);
  EXPECT_TRUE(read_safetensors(good).ok());
  Result<SafetensorsFile> torn = read_safetensors(checkpoint_path(dir_, 200));
  ASSERT_FALSE(torn.ok());
  EXPECT_NE(torn.status().message().find("model.ckpt-200.safetensors"), std::string::npos);

  // The resumed run saves again: the torn file is replaced and the leftovers are cleaned.
  ASSERT_TRUE(save(200).ok());
  EXPECT_EQ(latest(), checkpoint_path(dir_, 200));
  EXPECT_TRUE(read_safetensors(latest()).ok());
  EXPECT_FALSE(fs::exists(file("model.ckpt-200.safetensors.tmp-4242-0")));
  EXPECT_FALSE(fs::exists(file("checkpoint.tmp-4242-1")));
}

TEST_F(CheckpointDirTest, IndexNamingAMissingFileIsAnError) {
  fs::create_directories(dir_);
  write_text("checkpoint", "model_checkpoint_path: \"model.ckpt-7\"\n");
  Result<std::optional<std::string>> r = latest_checkpoint(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model.ckpt-7"), std::string::npos) << r.status().message();
}

TEST_F(CheckpointDirTest, MalformedIndexIsAnError) {
  fs::create_directories(dir_);
  write_text("checkpoint", "model_checkpoint_path: model.ckpt-7\n");
  Result<std::optional<std::string>> r = latest_checkpoint(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("checkpoint:1"), std::string::npos) << r.status().message();
}

TEST_F(CheckpointDirTest, ReadsIndexWrittenByTensorFlowWithAbsolutePathsAndTimestamps) {
  ASSERT_TRUE(save(5).ok());
  const std::string abs = (fs::path(dir_) / "model.ckpt-5").string();
  write_text("checkpoint", "model_checkpoint_path: \"" + abs +
                               "\"\n"
                               "all_model_checkpoint_paths: \"" +
                               abs +
                               "\"\n"
                               "all_model_checkpoint_timestamps: 1556812121.25\n"
                               "last_preserved_timestamp: 1556812000.5\n");
  EXPECT_EQ(latest(), abs + ".safetensors");
  Result<std::optional<CheckpointState>> state = read_checkpoint_state(dir_);
  ASSERT_TRUE(state.ok() && state->has_value());
  EXPECT_EQ((*state)->all_model_checkpoint_paths, std::vector<std::string>{abs});
}

TEST_F(CheckpointDirTest, IndexEscapesRoundTrip) {
  fs::create_directories(dir_);
  // Non-ASCII bytes are octal-escaped by TF's text format; quotes and backslashes too.
  const CheckpointState state{"r\xc3\xa9sum\xc3\xa9/model.ckpt-3",
                              {"a\"b\\c", "r\xc3\xa9sum\xc3\xa9/model.ckpt-3"}};
  const std::string text = checkpoint_state_text(state);
  EXPECT_NE(text.find("r\\303\\251sum"), std::string::npos) << text;
  write_text("checkpoint", text + "all_model_checkpoint_paths: 'x\\x41\\101'\n");
  Result<std::optional<CheckpointState>> back = read_checkpoint_state(dir_);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->model_checkpoint_path, state.model_checkpoint_path);
  ASSERT_EQ((*back)->all_model_checkpoint_paths.size(), 3u);
  EXPECT_EQ((*back)->all_model_checkpoint_paths[0], "a\"b\\c");
  EXPECT_EQ((*back)->all_model_checkpoint_paths[2], "xAA");
}

TEST(CheckpointStateText, EscapesLikeTextFormat) {
  CheckpointState s{"we\"ird\\", {"a", "we\"ird\\"}};
  EXPECT_EQ(checkpoint_state_text(s),
            "model_checkpoint_path: \"we\\\"ird\\\\\"\n"
            "all_model_checkpoint_paths: \"a\"\n"
            "all_model_checkpoint_paths: \"we\\\"ird\\\\\"\n");
}

}  // namespace
}  // namespace ic
