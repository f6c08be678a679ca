// --trainable_scopes (TF-slim train_image_classifier's flag) through the whole training run:
// variables outside the scopes keep their values and optimizer slots bit for bit while those
// inside change (inception_v3 with RMSProp, resnet50 with Nesterov momentum); batch norm's moving
// statistics still update (TF-slim's update ops run for every layer); the fine-tuning recipe
// (--warm_start_from a 10-class run, --num_classes=7, only the logits trained) leaves every other
// warm-started variable exactly as loaded; a scope that matches nothing and a malformed list are
// errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/checkpoint_contents.h"
#include "io/checkpoint_dir.h"
#include "train/recipe.h"
#include "train/run_loop.h"
#include "train/train_flags.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  Status status;
  std::string log;
};

// A tiny, deterministic inception_v3 training run with `extra` flags.
RunResult train(const std::string& model_dir, int steps, std::vector<std::string> extra,
                const std::string& model = "inception_v3", int side = 75) {
  std::vector<std::string> args = {"prog",
                                   "--mode=train",
                                   "--use_data=fake",
                                   "--use_tpu=False",
                                   "--width=" + std::to_string(side),
                                   "--height=" + std::to_string(side),
                                   "--depth_multiplier=0.25",
                                   "--iterations=1",
                                   "--train_batch_size=4",
                                   "--save_checkpoints_secs=0",
                                   "--num_threads=1",
                                   "--num_parallel_calls=1",
                                   "--seed=3",
                                   "--train_steps=" + std::to_string(steps),
                                   "--model_dir=" + model_dir};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  bool help = false;
  Result<RunOptions> options =
      parse_run_options(model, static_cast<int>(argv.size()), argv.data(), &help);
  if (!options.ok()) return {options.status(), ""};
  BackendOptions b;
  b.num_threads = 1;
  Result<std::unique_ptr<Backend>> backend = make_backend(b);
  if (!backend.ok()) return {backend.status(), ""};
  std::ostringstream log;
  Status status = run_mode(*options, **backend, log);
  return {status, log.str()};
}

CheckpointContents read(const std::string& dir, int64_t step) {
  Result<CheckpointContents> file = read_checkpoint(checkpoint_prefix(dir, step));
  EXPECT_TRUE(file.ok()) << file.status().message();
  return file.ok() ? std::move(file).value() : CheckpointContents{};
}

// The variable a checkpoint tensor belongs to: its name less an optimizer-slot suffix; empty
// for EMA shadows and global_step (not compared: TF-slim averages every variable).
std::string variable_of(const std::string& name) {
  if (name.ends_with("/ExponentialMovingAverage") || name == "global_step") return "";
  for (const char* slot : {"/RMSProp_1", "/RMSProp", "/Momentum"}) {
    if (name.ends_with(slot)) return name.substr(0, name.size() - std::string(slot).size());
  }
  return name;
}

bool under(const std::string& name, const std::vector<std::string>& scopes) {
  for (const std::string& s : scopes)
    if (name.starts_with(s)) return true;
  return false;
}

bool is_moving_statistic(const std::string& name) {
  return name.ends_with("/moving_mean") || name.ends_with("/moving_variance");
}

class TrainableScopes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("ic_scopes_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// One model with its logit scope and optimizer: inception_v3 (RMSProp: two slots) and
// resnet50 (Nesterov momentum: one slot, and the extra Nesterov update over the same ranges).
struct ScopeCase {
  std::string model;
  int side;
  std::string logits_scope;
  int slots;
};

class TrainableScopesModels : public TrainableScopes,
                              public ::testing::WithParamInterface<ScopeCase> {};

TEST_P(TrainableScopesModels, OnlyVariablesUnderTheScopesChange) {
  const ScopeCase& c = GetParam();
  const std::string dir = dir_ + "/run";
  const RunResult first = train(dir, 2, {"--num_classes=10"}, c.model, c.side);
  ASSERT_TRUE(first.status.ok()) << first.status.message();
  const std::vector<std::string> scopes = {c.logits_scope};
  const RunResult resumed =
      train(dir, 5, {"--num_classes=10", "--trainable_scopes=" + c.logits_scope}, c.model, c.side);
  ASSERT_TRUE(resumed.status.ok()) << resumed.status.message();
  EXPECT_NE(resumed.log.find("Training 2 of "), std::string::npos) << resumed.log;
  EXPECT_NE(resumed.log.find("under --trainable_scopes=" + c.logits_scope), std::string::npos);

  const CheckpointContents before = read(dir, 2), after = read(dir, 5);
  int frozen = 0, trained = 0, statistics_moved = 0;
  for (const TensorEntry& b : before.tensors) {
    const std::string variable = variable_of(b.name);
    if (variable.empty()) continue;
    const TensorEntry* a = after.find(b.name);
    ASSERT_NE(a, nullptr) << b.name;
    if (is_moving_statistic(variable)) {
      statistics_moved += a->bytes != b.bytes;
    } else if (under(variable, scopes)) {
      EXPECT_NE(a->bytes, b.bytes) << b.name << " is under the scope but did not change";
      ++trained;
    } else {
      EXPECT_EQ(a->bytes, b.bytes) << b.name << " is outside the scope but changed";
      ++frozen;
    }
  }
  EXPECT_EQ(trained, 2 * (1 + c.slots));  // weights and biases, each with its slots
  EXPECT_GT(frozen, 100);
  EXPECT_GT(statistics_moved, 0);  // TF-slim's batch-norm update ops run for frozen layers too
}

INSTANTIATE_TEST_SUITE_P(All, TrainableScopesModels,
                         ::testing::Values(ScopeCase{"inception_v3", 75, "InceptionV3/Logits", 2},
                                           ScopeCase{"resnet50", 64, "resnet_v1_50/logits", 1}));

TEST_F(TrainableScopes, FineTuneFromAnotherClassCount) {
  const RunResult source = train(dir_ + "/ten", 2, {"--num_classes=10"});
  ASSERT_TRUE(source.status.ok()) << source.status.message();
  const std::vector<std::string> scopes = {"InceptionV3/Logits", "InceptionV3/AuxLogits"};
  const RunResult tuned = train(dir_ + "/seven", 3,
                                {"--num_classes=7", "--warm_start_from=" + dir_ + "/ten",
                                 "--trainable_scopes=InceptionV3/Logits,InceptionV3/AuxLogits"});
  ASSERT_TRUE(tuned.status.ok()) << tuned.status.message();

  const CheckpointContents ten = read(dir_ + "/ten", 2), seven = read(dir_ + "/seven", 3);
  int frozen = 0, retrained = 0;
  for (const TensorEntry& t : ten.tensors) {
    // The variables themselves (slots start fresh in a warm start).
    if (variable_of(t.name) != t.name || is_moving_statistic(t.name)) continue;
    const TensorEntry* s = seven.find(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    if (!(s->shape == t.shape)) {
      EXPECT_TRUE(under(t.name, scopes)) << t.name;  // the 7-class layers: fresh
      continue;
    }
    if (under(t.name, scopes)) {
      EXPECT_NE(s->bytes, t.bytes) << t.name << " was warm-started and trained";
      ++retrained;
    } else {
      EXPECT_EQ(s->bytes, t.bytes) << t.name << " is frozen but differs from the source";
      ++frozen;
    }
  }
  EXPECT_GT(frozen, 100);
  EXPECT_GT(retrained, 0);  // AuxLogits' inner convolutions keep their shape
  EXPECT_EQ(seven.find("InceptionV3/Logits/Conv2d_1c_1x1/biases")->shape, (Shape{7}));
}

TEST_F(TrainableScopes, ScopeMatchingNothingIsAnError) {
  const RunResult run = train(
      dir_ + "/none", 1, {"--num_classes=10", "--trainable_scopes=InceptionV3/Logits,Nope/Logits"});
  ASSERT_FALSE(run.status.ok());
  EXPECT_NE(run.status.message().find("'Nope/Logits' matches no trainable variable"),
            std::string::npos)
      << run.status.message();
}

TEST(TrainableScopesRecipe, CommaSeparatedAndStripped) {
  RunOptions options;
  options.model = "inception_v3";
  options.trainable_scopes = " InceptionV3/Logits , InceptionV3/AuxLogits";
  Result<TrainRecipe> recipe = train_recipe_for(options);
  ASSERT_TRUE(recipe.ok()) << recipe.status().message();
  EXPECT_EQ(recipe->trainable_scopes,
            (std::vector<std::string>{"InceptionV3/Logits", "InceptionV3/AuxLogits"}));
  for (const char* bad :
       {"InceptionV3/Logits,,InceptionV3/AuxLogits", "InceptionV3/Logits,", " "}) {
    options.trainable_scopes = bad;
    Result<TrainRecipe> r = train_recipe_for(options);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--trainable_scopes"), std::string::npos);
  }
}

}  // namespace
}  // namespace ic
