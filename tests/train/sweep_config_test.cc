// The sweep config (train/sweep_config.h): a grid expands into every combination in the order
// written (the last flag fastest) and a list of variants follows it, with directory-safe
// names; JSON values keep their spelling; every mistake is refused naming the file.
#include "train/sweep_config.h"

#include <gtest/gtest.h>

#include "models/model.h"

namespace ic {
namespace {

constexpr char kPath[] = "/x/sweep.json";

TEST(SweepConfig, AGridAndAListExpandIntoNamedVariants) {
  Result<SweepConfig> c = parse_sweep_config(R"({
      "trainer": "inception_v3",
      "flags": {"use_data": "fake", "train_batch_size": 8, "use_tpu": false},
      "grid": {"learning_rate": [0.1, 1e-2], "depth_multiplier": [0.5, 1.0]},
      "variants": [{"label_smoothing": 0.1, "optimizer": "momentum"}],
      "metric": "accuracy@5", "mode": "max",
      "budget": {"train_steps": 300}})",
                                             kPath, model_names());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->trainer, "inception_v3");
  EXPECT_EQ(c->base, (std::vector<FlagSetting>{
                         {"use_data", "fake"}, {"train_batch_size", "8"}, {"use_tpu", "false"}}));
  ASSERT_EQ(c->variants.size(), 5u);
  EXPECT_EQ(c->variants[0].name, "00_learning_rate=0.1_depth_multiplier=0.5");
  EXPECT_EQ(c->variants[1].name, "01_learning_rate=0.1_depth_multiplier=1.0");
  EXPECT_EQ(c->variants[2].name, "02_learning_rate=1e-2_depth_multiplier=0.5");
  EXPECT_EQ(c->variants[2].flags,
            (std::vector<FlagSetting>{{"learning_rate", "1e-2"}, {"depth_multiplier", "0.5"}}));
  EXPECT_EQ(c->variants[4].name, "04_label_smoothing=0.1_optimizer=momentum");
  EXPECT_EQ(c->metric, ExportBestMetric::accuracy_at_5);
  EXPECT_EQ(c->mode, ExportBestMode::max);
  EXPECT_EQ(c->train_steps, 300);
}

TEST(SweepConfig, HalvingTakesEtaAndTheFirstRungInTheBudget) {
  Result<SweepConfig> c = parse_sweep_config(
      R"({"trainer": "inception_v3", "grid": {"learning_rate": [0.1, 0.2]},
          "schedule": "halving", "budget": {"train_steps": 900, "eta": 3, "first_rung_steps": 100}})",
      kPath, model_names());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->schedule, SweepSchedule::halving);
  EXPECT_EQ(c->eta, 3);
  EXPECT_EQ(c->first_rung_steps, 100);
  Result<SweepConfig> plain = parse_sweep_config(
      R"({"trainer": "inception_v3", "grid": {"x": [1]}, "budget": {"train_steps": 9}})", kPath,
      model_names());
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->schedule, SweepSchedule::full);
}

TEST(SweepConfig, AValueIsMadeSafeForADirectoryName) {
  Result<SweepConfig> c = parse_sweep_config(
      R"({"trainer": "resnet50", "variants": [{"warm_start_from": "/a b/../c"}],
          "budget": {"train_steps": 1}})",
      kPath, model_names());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->variants[0].name, "00_warm_start_from=-a-b-..-c");
  EXPECT_EQ(c->variants[0].flags[0].second, "/a b/../c");  // the flag keeps its value
  EXPECT_EQ(c->metric, ExportBestMetric::accuracy);        // the default
}

TEST(SweepConfig, AVariantsModelPicksItsTrainer) {
  Result<SweepConfig> c = parse_sweep_config(
      R"({"trainer": "inception_v3", "grid": {"model": ["inception_v3", "resnet50"]},
          "variants": [{"learning_rate": 0.1}], "budget": {"train_steps": 4}})",
      kPath, model_names());
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->variants.size(), 3u);
  EXPECT_EQ(c->variants[0].trainer, "inception_v3");
  EXPECT_EQ(c->variants[1].trainer, "resnet50");
  EXPECT_EQ(c->variants[1].name, "01_model=resnet50");
  EXPECT_EQ(c->variants[2].trainer, "inception_v3");  // the config's
}

TEST(SweepConfig, MistakesAreRefusedNamingTheFile) {
  const std::pair<const char*, const char*> bad[] = {
      {"[1]", "not a JSON object"},
      {"{", "not JSON"},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}})", "budget"},
      {R"({"trainer": "vgg", "grid": {"x": [1]}, "budget": {"train_steps": 1}})", "vgg"},
      {R"({"trainer": "inception_v3", "budget": {"train_steps": 1}})", "\"grid\" or \"variants\""},
      {R"({"trainer": "inception_v3", "grid": {"model": ["resnet50", "vgg16"]},
           "budget": {"train_steps": 1}})",
       "unknown model \"vgg16\" (inception_v3, inception_v4, resnet50, mobilenet_v1"},
      {R"({"trainer": "inception_v3", "flags": {"model": "resnet50"}, "grid": {"x": [1]},
           "budget": {"train_steps": 1}})",
       "the model of every variant is \"trainer\""},
      {R"({"trainer": "inception_v3", "grid": {"x": []}, "budget": {"train_steps": 1}})",
       "non-empty list"},
      {R"({"trainer": "inception_v3", "grid": {"model_dir": ["/a"]}, "budget": {"train_steps": 1}})",
       "--model_dir is set by the sweep"},
      {R"({"trainer": "inception_v3", "flags": {"train_steps": 3}, "grid": {"x": [1]},
           "budget": {"train_steps": 1}})",
       "--train_steps is set by the sweep"},
      {R"({"trainer": "inception_v3", "grid": {"Bad-Name": [1]}, "budget": {"train_steps": 1}})",
       "not a flag name"},
      {R"({"trainer": "inception_v3", "grid": {"x": [[1]]}, "budget": {"train_steps": 1}})",
       "number, string or boolean"},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}, "metric": "top1",
           "budget": {"train_steps": 1}})",
       "accuracy, accuracy@5 or loss"},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}, "budget": {"train_steps": 0}})",
       "N >= 1"},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}, "budget": {"train_steps": 1},
           "shedule": "halving"})",
       "unknown key \"shedule\""},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}, "schedule": "asha",
           "budget": {"train_steps": 4}})",
       "full or halving"},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}, "budget": {"train_steps": 4, "eta": 3}})",
       "with \"schedule\": \"halving\""},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}, "schedule": "halving",
           "budget": {"train_steps": 4, "eta": 1}})",
       "\"eta\" must be an integer from 2"},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}, "schedule": "halving",
           "budget": {"train_steps": 4, "first_rung_steps": 4}})",
       "to train_steps - 1"},
      {R"({"trainer": "inception_v3", "grid": {"x": [1]}, "schedule": "halving",
           "budget": {"train_steps": 4, "rungs": 2}})",
       "takes only \"train_steps\", \"eta\" and \"first_rung_steps\""},
      {R"({"trainer": "inception_v3", "grid": {"stop_at_step": [2]}, "budget": {"train_steps": 4}})",
       "--stop_at_step is set by the sweep"},
      {R"({"trainer": "inception_v3", "grid": {"a": [1,2,3,4,5,6,7,8,9,10], "b": [1,2,3,4,5,6,7,8,9,10],
           "c": [1,2,3,4,5,6,7,8,9,10], "d": [1,2,3,4,5,6,7,8,9,10], "e": [1,2]},
           "budget": {"train_steps": 1}})",
       "more than 10000"},
  };
  for (const auto& [text, why] : bad) {
    Result<SweepConfig> c = parse_sweep_config(text, kPath, model_names());
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find(kPath), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find(why), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace ic
