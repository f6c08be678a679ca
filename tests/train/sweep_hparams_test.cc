// The sweep's TensorBoard HParams summaries (train/sweep_hparams.h), read back from the event
// files: the experiment names the flags the variants set, typed (numbers as numbers, text as
// text, a flag of mixed kinds as text) with their values, and the eval metrics; each session
// has its variant's values and ends with success; neither is written twice.
#include "train/sweep_hparams.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "io/event_reader.h"
#include "proto/hparams.pb.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
namespace hp = tensorboard::hparams;

// The "hparams" plugin summaries in the event files directly in `dir`, by tag.
std::multimap<std::string, hp::HParamsPluginData> hparams_in(const std::string& dir) {
  std::multimap<std::string, hp::HParamsPluginData> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) != 0) continue;
    Result<std::vector<tensorflow::Event>> events = read_events(entry.path().string());
    EXPECT_TRUE(events.ok()) << events.status().message();
    if (!events.ok()) continue;
    for (const tensorflow::Event& e : *events) {
      for (const tensorflow::Summary::Value& v : e.summary().value()) {
        if (v.metadata().plugin_data().plugin_name() != "hparams") continue;
        hp::HParamsPluginData data;
        EXPECT_TRUE(data.ParseFromString(v.metadata().plugin_data().content()));
        EXPECT_EQ(data.version(), 0);
        found.emplace(v.tag(), data);
      }
    }
  }
  return found;
}

SweepConfig config() {
  SweepConfig c;
  c.trainer = "inception_v3";
  c.variants = {{"00_a", {{"learning_rate", "0.1"}, {"optimizer", "RMS"}}, c.trainer},
                {"01_b", {{"learning_rate", "0.02"}, {"optimizer", "momentum"}}, c.trainer},
                {"02_c", {{"learning_rate", "0.1"}, {"use_annotated_bbox", "true"}}, c.trainer},
                {"03_d", {{"learning_rate", "fast"}}, c.trainer}};
  return c;
}

TEST(SweepHparams, TheExperimentNamesTheVariedFlagsTypedWithTheirValues) {
  testing::TempDir dir;
  ASSERT_TRUE(write_hparams_experiment(config(), dir.path()).ok());
  ASSERT_TRUE(write_hparams_experiment(config(), dir.path()).ok());  // kept, not written twice
  const auto found = hparams_in(dir.path());
  ASSERT_EQ(found.count("_hparams_/experiment"), 1u);
  const hp::Experiment& e = found.find("_hparams_/experiment")->second.experiment();
  ASSERT_EQ(e.hparam_infos_size(), 3);
  EXPECT_EQ(e.hparam_infos(0).name(), "learning_rate");
  EXPECT_EQ(e.hparam_infos(0).type(), hp::DATA_TYPE_STRING);  // "fast" among the numbers
  ASSERT_EQ(e.hparam_infos(0).domain_discrete().values_size(), 3);
  EXPECT_EQ(e.hparam_infos(0).domain_discrete().values(1).string_value(), "0.02");
  EXPECT_EQ(e.hparam_infos(1).name(), "optimizer");
  EXPECT_EQ(e.hparam_infos(1).type(), hp::DATA_TYPE_STRING);
  EXPECT_EQ(e.hparam_infos(2).name(), "use_annotated_bbox");
  EXPECT_EQ(e.hparam_infos(2).type(), hp::DATA_TYPE_BOOL);
  EXPECT_TRUE(e.hparam_infos(2).domain_discrete().values(0).bool_value());
  ASSERT_EQ(e.metric_infos_size(), 3);
  EXPECT_EQ(e.metric_infos(0).name().group(), "model/eval");
  EXPECT_EQ(e.metric_infos(0).name().tag(), "accuracy");
  EXPECT_EQ(e.metric_infos(2).name().tag(), "loss");
}

TEST(SweepHparams, ASessionHasItsVariantsValuesAndEndsWithSuccess) {
  testing::TempDir dir;
  SweepConfig c = config();
  c.variants.pop_back();  // learning_rate is all numbers now
  fs::create_directories(dir.sub("01_b"));
  ASSERT_TRUE(write_hparams_session_start(c, c.variants[1], dir.path()).ok());
  ASSERT_TRUE(write_hparams_session_start(c, c.variants[1], dir.path()).ok());  // a resumed run
  ASSERT_TRUE(write_hparams_session_end(c.variants[1], dir.path()).ok());
  const auto found = hparams_in(dir.sub("01_b"));
  ASSERT_EQ(found.count("_hparams_/session_start_info"), 1u);
  const hp::SessionStartInfo& start =
      found.find("_hparams_/session_start_info")->second.session_start_info();
  ASSERT_EQ(start.hparams().size(), 2u);
  EXPECT_DOUBLE_EQ(start.hparams().at("learning_rate").number_value(), 0.02);
  EXPECT_EQ(start.hparams().at("optimizer").string_value(), "momentum");
  EXPECT_EQ(start.group_name(), "01_b");
  ASSERT_EQ(found.count("_hparams_/session_end_info"), 1u);
  EXPECT_EQ(found.find("_hparams_/session_end_info")->second.session_end_info().status(),
            hp::STATUS_SUCCESS);
}

}  // namespace
}  // namespace ic
