// load_for_inference of a SavedModel export_model wrote: the variables' metadata gives the
// model back, the step comes back, and the logits through the inference graph equal the
// checkpoint's (the variables hold the EMA values the export chose). A SavedModel without
// that metadata, or without variables/, is an error saying what can be served; the newest
// version holding a SavedModel is what an export directory serves.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/temp_dir_test_util.h"
#include "infer/model_export.h"
#include "infer/random_checkpoint_test_util.h"
#include "io/checkpoint_dir.h"
#include "io/tensor_bundle.h"
#include "runtime/inference_model.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::logits_of_two;
using testing::TempDir;
using testing::write_random_checkpoint;

TEST(SavedModelLoad, LogitsEqualTheCheckpoints) {
  const TempDir temp("saved_model_");
  const std::string& dir = temp.path();
  write_random_checkpoint(dir, {.step = 9, .seed = 11});
  Result<InferenceModel> trained = load_for_inference(dir, "");
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  const std::string base = dir + "/export";
  Result<std::string> older = export_trained_model(*trained, base, ExportFormat::safetensors);
  ASSERT_TRUE(older.ok()) << older.status().message();
  Result<std::string> version = export_trained_model(*trained, base, ExportFormat::saved_model);
  ASSERT_TRUE(version.ok()) << version.status().message();

  // The newest version holds only a SavedModel: that is what the directory serves.
  Result<std::optional<std::string>> newest = newest_servable(base);
  ASSERT_TRUE(newest.ok()) << newest.status().message();
  ASSERT_TRUE(newest->has_value());
  EXPECT_EQ(**newest, *version + "/saved_model.pb");
  EXPECT_EQ(export_version_of(**newest), std::stoll(fs::path(*version).filename()));

  Result<InferenceModel> exported = load_for_inference(base, "");
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_EQ(exported->checkpoint, *version + "/saved_model.pb");
  EXPECT_EQ(exported->global_step, 9);
  EXPECT_EQ(exported->meta.model, "inception_v3");
  EXPECT_EQ(exported->meta.num_classes, 7);
  EXPECT_EQ(exported->meta.height, 75);
  EXPECT_EQ(exported->meta.width, 75);
  EXPECT_EQ(exported->meta.depth_multiplier, 0.25);
  EXPECT_FALSE(exported->options.aux_logits);  // the export has no auxiliary head
  for (const auto& [name, entry] : exported->weights) {
    EXPECT_EQ(entry.bytes, trained->weights.at(name).bytes) << name;  // the EMA values
  }

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(2 * 75 * 75 * 3);
  for (float& v : images) v = pixel(rng);
  const std::vector<float> expected = logits_of_two(*trained, images);
  const std::vector<float> got = logits_of_two(*exported, images);
  ASSERT_EQ(got.size(), expected.size());
  ASSERT_FALSE(got.empty());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6) << i;
}

TEST(SavedModelLoad, ASavedModelThatIsNotOursSaysWhatCanBeServed) {
  const TempDir temp("saved_model_");
  const std::string& dir = temp.path();
  // As TensorFlow writes one: saved_model.pb and variables/ without our metadata.
  fs::create_directories(dir + "/1");
  std::ofstream(dir + "/1/saved_model.pb") << "not ours";
  const std::vector<float> kernel(4, 0.5f);
  ASSERT_TRUE(
      write_tensor_bundle(dir + "/1/variables/variables", {},
                          {TensorView{"dense/kernel", DType::f32, Shape{2, 2}, kernel.data()}})
          .ok());
  Result<InferenceModel> foreign = load_for_inference(dir, "");
  ASSERT_FALSE(foreign.ok());
  const std::string message = foreign.status().message();
  EXPECT_NE(message.find(dir + "/1/saved_model.pb"), std::string::npos) << message;
  EXPECT_NE(message.find("export_model did not write"), std::string::npos) << message;
  EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;

  // Without variables/ the version is no servable at all; named directly, it is an error.
  fs::create_directories(dir + "/2");
  std::ofstream(dir + "/2/saved_model.pb") << "no variables";
  Result<std::optional<std::string>> newest = newest_servable(dir);
  ASSERT_TRUE(newest.ok()) << newest.status().message();
  EXPECT_EQ(newest->value_or(""), dir + "/1/saved_model.pb");
  Result<InferenceModel> bare = load_for_inference("", dir + "/2/saved_model.pb");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("variables"), std::string::npos)
      << bare.status().message();
}

}  // namespace
}  // namespace ic
