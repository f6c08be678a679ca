// A training run resumes from the newest usable checkpoint even when the `checkpoint` index is
// missing, empty, corrupt or stale, or the newest save is damaged; it never starts over on top
// of saves it could not read.
#include "io/checkpoint_recovery.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/checkpoint_dir.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

class CheckpointRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("ic_recovery_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void save(int64_t step, CheckpointFormat format = CheckpointFormat::tf) {
    float weights[3] = {static_cast<float>(step), 0.5f, -1.f};
    int64_t global_step = step;
    ASSERT_TRUE(save_checkpoint(dir_, step, {{"model", "inception_v3"}},
                                {{"w", DType::f32, Shape{3}, weights},
                                 {"global_step", DType::i64, Shape{}, &global_step}},
                                5, format)
                    .ok());
  }
  // The step a resume point's weights carry.
  static float step_of(const ResumePoint& point) {
    for (const TensorEntry& t : point.contents.tensors) {
      if (t.name == "w") return *reinterpret_cast<const float*>(t.bytes.data());
    }
    return -1;
  }
  Result<std::optional<ResumePoint>> find(const CheckpointCheck& check = accept_all) {
    return find_resume_point(dir_, check);
  }
  static Status accept_all(const CheckpointContents&, const std::string&) { return Status(); }
  static bool notes_mention(const ResumePoint& point, const std::string& text) {
    for (const std::string& note : point.notes)
      if (note.find(text) != std::string::npos) return true;
    return false;
  }
  void write_index(const std::string& text) { std::ofstream(dir_ + "/checkpoint") << text; }
  void flip_a_data_byte(int64_t step) {
    const std::string data = checkpoint_prefix(dir_, step) + ".data-00000-of-00001";
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    char c = 0;
    f.seekg(0);
    f.get(c);
    f.seekp(0);
    f.put(static_cast<char>(c ^ 0x40));
  }

  std::string dir_;
};

TEST_F(CheckpointRecoveryTest, AFreshDirectoryHasNone) {
  auto found = find();
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_FALSE(found->has_value());
}

TEST_F(CheckpointRecoveryTest, TheListedCheckpointWithoutNotes) {
  save(2);
  save(4);
  auto found = find();
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
  EXPECT_EQ(step_of(**found), 4);
  EXPECT_TRUE((*found)->notes.empty());
}

TEST_F(CheckpointRecoveryTest, AMissingEmptyOrCorruptIndexRecoversTheNewestFromTheFiles) {
  save(2);
  save(4, CheckpointFormat::safetensors);
  for (const char* index : {"", "model_checkpoint_path: \"model.ckpt-4\n garbage {{{"}) {
    write_index(index);  // empty, then corrupt
    auto found = find();
    ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
    EXPECT_EQ(step_of(**found), 4) << "index: '" << index << "'";
    EXPECT_TRUE(notes_mention(**found, "recovering")) << "index: '" << index << "'";
  }
  fs::remove(dir_ + "/checkpoint");  // missing altogether
  auto found = find();
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
  EXPECT_EQ(step_of(**found), 4);
  EXPECT_TRUE(notes_mention(**found, "is missing"));
}

TEST_F(CheckpointRecoveryTest, ANewerCompleteSaveThanTheIndexNamesIsUsed) {
  save(2);
  save(4);
  write_index("model_checkpoint_path: \"model.ckpt-2\"\n");  // as if the crash hit before it
  auto found = find();
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
  EXPECT_EQ(step_of(**found), 4);
  EXPECT_TRUE(notes_mention(**found, "newer complete save"));
}

TEST_F(CheckpointRecoveryTest, ADamagedNewestSaveFallsBackToThePreviousOneWithAWarning) {
  save(2);
  save(4);
  flip_a_data_byte(4);
  auto found = find();
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
  EXPECT_EQ(step_of(**found), 2);
  EXPECT_TRUE(notes_mention(**found, "skipping checkpoint " + checkpoint_prefix(dir_, 4)));
}

TEST_F(CheckpointRecoveryTest, ASaveTheCallerRefusesFallsBackToo) {
  save(2);
  save(4);
  auto found = find([](const CheckpointContents&, const std::string& path) -> Status {
    if (path.find("ckpt-4") != std::string::npos) return error(path, ": NaN weights");
    return Status();
  });
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
  EXPECT_EQ(step_of(**found), 2);
  EXPECT_TRUE(notes_mention(**found, "NaN weights"));
}

TEST_F(CheckpointRecoveryTest, WhenNoSaveIsUsableItIsAnErrorNotAFreshStart) {
  save(2);
  save(4);
  flip_a_data_byte(2);
  flip_a_data_byte(4);
  fs::remove(dir_ + "/checkpoint");
  auto found = find();
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find("no usable checkpoint in " + dir_), std::string::npos)
      << found.status().message();
}

TEST_F(CheckpointRecoveryTest, TemporaryFilesOfAnInterruptedSaveAreNotCheckpoints) {
  save(2);
  std::ofstream(dir_ + "/model.ckpt-9.index.tmp-123-0") << "half";
  std::ofstream(dir_ + "/model.ckpt-9.safetensors.tmp-123-1") << "half";
  fs::remove(dir_ + "/checkpoint");
  auto found = find();
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
  EXPECT_EQ(step_of(**found), 2);
}

}  // namespace
}  // namespace ic
