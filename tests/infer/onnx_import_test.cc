// read_onnx_export / load_servable_model: an ONNX file our export wrote comes back as the model
// it was exported from (its metadata, its step, logits through the inference graph equal to the
// checkpoint's to a float's rounding, the batch norms the export folded coming back as
// identity batch norms); an export directory whose newest version holds only model.onnx
// serves it; an ONNX file we did not write, or an int8 one, is an error saying what serves.
#include "infer/onnx_import.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

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

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::logits_of_two;
using testing::TempDir;
using testing::write_random_checkpoint;

class OnnxImport : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxImport, LogitsEqualTheCheckpoints) {
  const TempDir temp("onnx_import_");
  const std::string& dir = temp.path();
  write_random_checkpoint(dir, {.model = GetParam()});
  Result<InferenceModel> trained = load_for_inference(dir, "");
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  const std::string base = dir + "/export";
  ASSERT_TRUE(export_trained_model(*trained, base, ExportFormat::saved_model).ok());
  Result<std::string> version = export_trained_model(*trained, base, ExportFormat::onnx);
  ASSERT_TRUE(version.ok()) << version.status().message();

  Result<std::optional<std::string>> newest = newest_servable(base);
  ASSERT_TRUE(newest.ok()) << newest.status().message();
  EXPECT_EQ(newest->value_or(""), *version + "/model.onnx");
  EXPECT_EQ(export_version_of(newest->value_or("")), std::stoll(fs::path(*version).filename()));
  // The runtime alone does not read ONNX, and says who does.
  Result<InferenceModel> runtime_only = load_for_inference(base, "");
  ASSERT_FALSE(runtime_only.ok());
  EXPECT_NE(runtime_only.status().message().find("ONNX"), std::string::npos);

  Result<InferenceModel> exported = load_servable_model(base, "");
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_EQ(exported->checkpoint, *version + "/model.onnx");
  EXPECT_EQ(exported->global_step, 4);
  EXPECT_EQ(exported->meta.model, GetParam());
  EXPECT_EQ(exported->meta.num_classes, 7);
  EXPECT_EQ(exported->meta.height, 75);
  EXPECT_EQ(exported->meta.depth_multiplier, 0.25);

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(2 * 75 * 75 * 3);
  for (float& v : images) v = pixel(rng);
  const std::vector<float> expected = logits_of_two(*trained, images);
  const std::vector<float> got = logits_of_two(*exported, images);
  ASSERT_EQ(got.size(), expected.size());
  ASSERT_FALSE(got.empty());
  float scale = 0;
  for (float v : expected) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 1e-6 * std::max(1.f, scale)) << i;
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxImport,
                         ::testing::Values("inception_v3", "inception_v4", "resnet50"));

void write_onnx(const std::string& path, const onnx::ModelProto& m) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
}

TEST(OnnxImportErrors, AForeignOrInt8OnnxFileSaysWhatCanBeServed) {
  const TempDir temp("onnx_import_");
  const std::string& dir = temp.path();
  onnx::ModelProto foreign;
  foreign.set_producer_name("pytorch");
  foreign.mutable_graph()->set_name("resnet");
  write_onnx(dir + "/1/model.onnx", foreign);
  Result<InferenceModel> read = load_servable_model(dir, "");
  ASSERT_FALSE(read.ok());
  const std::string message = read.status().message();
  EXPECT_NE(message.find(dir + "/1/model.onnx"), std::string::npos) << message;
  EXPECT_NE(message.find("export_model did not write"), std::string::npos) << message;
  EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;

  onnx::ModelProto int8;
  int8.set_producer_name("inception.cpp");
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"model", "inception_v3"},
                                                        {"num_classes", "7"},
                                                        {"image_size", "75x75"},
                                                        {"global_step", "1"},
                                                        {"quantization", "int8 QDQ"}}) {
    onnx::StringStringEntryProto& e = *int8.add_metadata_props();
    e.set_key(key);
    e.set_value(value);
  }
  write_onnx(dir + "/2/model.onnx", int8);
  Result<InferenceModel> quantized = read_onnx_export(dir + "/2/model.onnx");
  ASSERT_FALSE(quantized.ok());
  EXPECT_NE(quantized.status().message().find("model.safetensors"), std::string::npos)
      << quantized.status().message();
}

}  // namespace
}  // namespace ic
