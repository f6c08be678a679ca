#include "io/checkpoint_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/safetensors.h"
#include "io/tensor_bundle.h"

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
  Status save(int64_t step, int keep_max = 5,
              CheckpointFormat format = CheckpointFormat::safetensors) {
    weights_ = {static_cast<float>(step), 0.5f, -1.0f};
    step_ = step;
    return save_checkpoint(
        dir_, step, {{"model", "inception_v3"}, {"num_classes", "1001"}},
        {{"InceptionV3/Logits/Conv2d_1c_1x1/biases", DType::f32, Shape{3}, weights_.data()},
         {"global_step", DType::i64, Shape{}, &step_}},
        keep_max, format);
  }
  Status save_tf(int64_t step, int keep_max = 5) {
    return save(step, keep_max, CheckpointFormat::tf);
  }
  // The first weight of the checkpoint at `path`, read in whichever format it is.
  float first_weight(const std::string& path) const {
    Result<CheckpointContents> back = read_checkpoint(path);
    EXPECT_TRUE(back.ok()) << back.status().message();
    if (!back.ok()) return -1;
    float first;
    std::memcpy(&first, back->find("InceptionV3/Logits/Conv2d_1c_1x1/biases")->bytes.data(), 4);
    return first;
  }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
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
  EXPECT_EQ(checkpoint_prefix("/m", 1200), "/m/model.ckpt-1200");
  EXPECT_EQ(checkpoint_path("/m", 1200, CheckpointFormat::tf), "/m/model.ckpt-1200");
  EXPECT_EQ(checkpoint_path("/m", 1200, CheckpointFormat::safetensors),
            "/m/model.ckpt-1200.safetensors");
  EXPECT_EQ(checkpoint_path("/m/", 0, CheckpointFormat::safetensors),
            "/m/model.ckpt-0.safetensors");
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
  for (int64_t step : {1, 2, 3}) {
    EXPECT_TRUE(fs::exists(checkpoint_path(dir_, step, CheckpointFormat::safetensors)));
  }
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
  const std::string good = checkpoint_path(dir_, 100, CheckpointFormat::safetensors);
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
  Result<SafetensorsFile> torn =
      read_safetensors(checkpoint_path(dir_, 200, CheckpointFormat::safetensors));
  ASSERT_FALSE(torn.ok());
  EXPECT_NE(torn.status().message().find("model.ckpt-200.safetensors"), std::string::npos);

  // The resumed run saves again: the torn file is replaced and the leftovers are cleaned.
  ASSERT_TRUE(save(200).ok());
  EXPECT_EQ(latest(), checkpoint_path(dir_, 200, CheckpointFormat::safetensors));
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

// The default format: TensorFlow's bundle, two files per checkpoint.
TEST_F(CheckpointDirTest, TfSaveWritesABundleAndTheIndexExactlyAsTensorFlow) {
  ASSERT_TRUE(save_tf(0).ok());
  ASSERT_TRUE(save_tf(1200).ok());
  EXPECT_EQ(read_text("checkpoint"),
            "model_checkpoint_path: \"model.ckpt-1200\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-0\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-1200\"\n");
  EXPECT_EQ(files(), (std::vector<std::string>{
                         "checkpoint", "model.ckpt-0.data-00000-of-00001", "model.ckpt-0.index",
                         "model.ckpt-1200.data-00000-of-00001", "model.ckpt-1200.index"}));
  // Named by its prefix, as TensorFlow's latest_checkpoint names it.
  EXPECT_EQ(latest(), file("model.ckpt-1200"));
  EXPECT_EQ(first_weight(latest()), 1200.0f);
  EXPECT_EQ(first_weight(file("model.ckpt-0.index")), 0.0f);
  Result<CheckpointContents> back = read_checkpoint(latest());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->metadata.at("model"), "inception_v3");
  int64_t step;
  std::memcpy(&step, back->find("global_step")->bytes.data(), 8);
  EXPECT_EQ(step, 1200);
  EXPECT_EQ(checkpoint_step(latest()), 1200);
}

TEST_F(CheckpointDirTest, TfPruningDeletesBothFilesOfEachCheckpoint) {
  for (int64_t step : {100, 200, 300, 400, 500}) ASSERT_TRUE(save_tf(step, 3).ok());
  EXPECT_EQ(files(), (std::vector<std::string>{
                         "checkpoint", "model.ckpt-300.data-00000-of-00001", "model.ckpt-300.index",
                         "model.ckpt-400.data-00000-of-00001", "model.ckpt-400.index",
                         "model.ckpt-500.data-00000-of-00001", "model.ckpt-500.index"}));
}

TEST_F(CheckpointDirTest, TfInterruptedSaveLeavesThePreviousCheckpointValid) {
  ASSERT_TRUE(save_tf(100).ok());
  const std::string data = read_text("model.ckpt-100.data-00000-of-00001");
  // A save of step 200 killed after its data file was renamed but before its index was: a
  // data file no index describes, a half-written index temp file, a data temp file.
  write_text("model.ckpt-200.data-00000-of-00001", data);
  write_text("model.ckpt-200.index.tmp-4242-1", "partial");
  write_text("model.ckpt-200.data-00000-of-00001.tmp-4242-0", data.substr(0, 5));
  EXPECT_EQ(latest(), file("model.ckpt-100"));
  EXPECT_EQ(first_weight(latest()), 100.0f);

  ASSERT_TRUE(save_tf(200).ok());
  EXPECT_EQ(latest(), file("model.ckpt-200"));
  EXPECT_EQ(first_weight(latest()), 200.0f);
  EXPECT_FALSE(fs::exists(file("model.ckpt-200.index.tmp-4242-1")));
  EXPECT_FALSE(fs::exists(file("model.ckpt-200.data-00000-of-00001.tmp-4242-0")));
}

TEST_F(CheckpointDirTest, SavingAStepInTheOtherFormatReplacesItsFiles) {
  ASSERT_TRUE(save_tf(10).ok());
  ASSERT_TRUE(save(10).ok());  // safetensors: the bundle would otherwise win resolution
  EXPECT_EQ(files(), (std::vector<std::string>{"checkpoint", "model.ckpt-10.safetensors"}));
  EXPECT_EQ(latest(), file("model.ckpt-10.safetensors"));
  ASSERT_TRUE(save_tf(10).ok());
  EXPECT_EQ(files(), (std::vector<std::string>{"checkpoint", "model.ckpt-10.data-00000-of-00001",
                                               "model.ckpt-10.index"}));
  EXPECT_EQ(latest(), file("model.ckpt-10"));
}

TEST_F(CheckpointDirTest, MixedFormatsResolveAndPruneTogether) {
  ASSERT_TRUE(save(1, 2).ok());
  ASSERT_TRUE(save_tf(2, 2).ok());
  EXPECT_EQ(resolve_checkpoint_path(dir_, "model.ckpt-1"), file("model.ckpt-1.safetensors"));
  EXPECT_EQ(resolve_checkpoint_path(dir_, "model.ckpt-2"), file("model.ckpt-2"));
  EXPECT_EQ(first_weight(resolve_checkpoint_path(dir_, "model.ckpt-1")), 1.0f);
  ASSERT_TRUE(save_tf(3, 2).ok());
  EXPECT_FALSE(fs::exists(file("model.ckpt-1.safetensors")));
  ASSERT_TRUE(save(4, 2).ok());
  EXPECT_EQ(files(), (std::vector<std::string>{"checkpoint", "model.ckpt-3.data-00000-of-00001",
                                               "model.ckpt-3.index", "model.ckpt-4.safetensors"}));
}

TEST_F(CheckpointDirTest, TfIndexWrittenByTensorFlowWithAbsoluteOrRelativePaths) {
  ASSERT_TRUE(save_tf(5).ok());
  const std::string abs = (fs::path(dir_) / "model.ckpt-5").string();
  write_text("checkpoint", "model_checkpoint_path: \"" + abs +
                               "\"\n"
                               "all_model_checkpoint_paths: \"" +
                               abs +
                               "\"\n"
                               "all_model_checkpoint_timestamps: 1556812121.25\n"
                               "last_preserved_timestamp: 1556812000.5\n");
  EXPECT_EQ(latest(), abs);
  EXPECT_EQ(first_weight(latest()), 5.0f);
  // TensorFlow's own relative form, and pruning of an absolute entry later.
  write_text("checkpoint",
             "model_checkpoint_path: \"model.ckpt-5\"\n"
             "all_model_checkpoint_paths: \"" +
                 abs + "\"\n");
  EXPECT_EQ(latest(), abs);
  write_text("model.ckpt-5.meta", "the graph TensorFlow's Saver writes beside a checkpoint");
  ASSERT_TRUE(save_tf(6, 1).ok());
  EXPECT_FALSE(fs::exists(abs + ".index"));
  EXPECT_FALSE(fs::exists(abs + ".data-00000-of-00001"));
  EXPECT_FALSE(fs::exists(abs + ".meta"));
}

TEST_F(CheckpointDirTest, MissingOrHalfCheckpointsAreErrorsNamingThem) {
  fs::create_directories(dir_);
  // A data file without its index is not a checkpoint.
  write_text("model.ckpt-7.data-00000-of-00001", "xxxx");
  write_text("checkpoint", "model_checkpoint_path: \"model.ckpt-7\"\n");
  Result<std::optional<std::string>> r = latest_checkpoint(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model.ckpt-7"), std::string::npos) << r.status().message();
  Result<CheckpointContents> none = read_checkpoint(file("model.ckpt-7"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(file("model.ckpt-7.index")), std::string::npos)
      << none.status().message();
  EXPECT_FALSE(checkpoint_exists(file("model.ckpt-7")));
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

namespace ic {
namespace {

// save_checkpoint never replaces a checkpoint of the same step that another run wrote (run ids
// differ), in either format; the same run, a checkpoint without a run id, or a damaged one are
// replaced.
TEST(CheckpointRunId, ASameStepCheckpointOfAnotherRunIsNeverReplaced) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("ic_ckpt_run_id_" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(dir);
  float value = 0;
  const auto save = [&](float v, const std::string& run, CheckpointFormat format) {
    value = v;
    std::map<std::string, std::string> metadata = {{"model", "inception_v3"}};
    if (!run.empty()) metadata[kRunIdKey] = run;
    return save_checkpoint(dir, 4, metadata, {{"w", DType::f32, Shape{1}, &value}}, 5, format);
  };
  const auto saved_value = [&] {
    Result<CheckpointContents> read = read_checkpoint(dir + "/model.ckpt-4");
    EXPECT_TRUE(read.ok()) << read.status().message();
    float v = -1;
    if (read.ok()) std::memcpy(&v, read->find("w")->bytes.data(), sizeof(v));
    return v;
  };
  for (CheckpointFormat format : {CheckpointFormat::tf, CheckpointFormat::safetensors}) {
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(save(1, "run-a", format).ok());
    ASSERT_TRUE(save(2, "run-a", format).ok());  // the same run saves the step again
    EXPECT_EQ(saved_value(), 2);
    for (CheckpointFormat other : {CheckpointFormat::tf, CheckpointFormat::safetensors}) {
      const Status refused = save(3, "run-b", other);
      ASSERT_FALSE(refused.ok());
      EXPECT_NE(refused.message().find("model.ckpt-4"), std::string::npos) << refused.message();
      EXPECT_NE(refused.message().find("another run (run id run-a; this run is run-b)"),
                std::string::npos)
          << refused.message();
      EXPECT_EQ(saved_value(), 2);  // untouched
    }
    ASSERT_TRUE(save(4, "", format).ok());       // no run id: nothing to compare with
    ASSERT_TRUE(save(5, "run-b", format).ok());  // the old one had no run id
    EXPECT_EQ(saved_value(), 5);
  }
  // A damaged same-step checkpoint is replaced.
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(save(6, "run-a", CheckpointFormat::safetensors).ok());
  std::ofstream(dir + "/model.ckpt-4.safetensors", std::ios::trunc) << "garbage";
  ASSERT_TRUE(save(7, "run-b", CheckpointFormat::safetensors).ok());
  EXPECT_EQ(saved_value(), 7);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ic
