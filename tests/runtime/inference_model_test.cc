// load_for_inference: the EMA shadow wins over the raw tensor (weights and batch-norm
// statistics alike, as evaluation reads them), a tensor without a shadow is read as it is, the step
// and metadata come back, and a missing or mis-shaped tensor is an error naming the checkpoint.
#include "runtime/inference_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "infer/model_export.h"
#include "io/checkpoint_dir.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

struct TinyCheckpoint {
  std::string dir;
  CheckpointMeta meta;
  Graph graph;
};

// Writes a step-7 checkpoint of a tiny inception_v3 where every raw weight is 1, its EMA
// shadow 2, every state tensor 3 and the moving means' shadows 4 (the moving variances have
// none); `skip` leaves one tensor out.
TinyCheckpoint write_tiny(const std::string& name, const std::string& skip = "") {
  TinyCheckpoint t;
  t.dir = (fs::temp_directory_path() / ("ic_trained_" + std::to_string(getpid()) + name)).string();
  fs::remove_all(t.dir);
  fs::create_directories(t.dir);
  t.meta = {"inception_v3", 10, 75, 75, 0.25, ""};
  Result<ModelOptions> options = inference_model_options(t.meta, 1);
  EXPECT_TRUE(options.ok());
  t.graph = build_model(*options).value();
  std::vector<std::vector<float>> storage;
  std::vector<TensorView> views;
  storage.reserve(2 * t.graph.params.size());
  for (const ParamInfo& p : t.graph.params) {
    if (p.name == skip) continue;
    storage.emplace_back(p.shape.numel(), p.trainable ? 1.f : 3.f);
    views.push_back({p.name, DType::f32, p.shape, storage.back().data()});
    if (p.trainable || p.name.ends_with("moving_mean")) {
      storage.emplace_back(p.shape.numel(), p.trainable ? 2.f : 4.f);
      views.push_back(
          {p.name + "/ExponentialMovingAverage", DType::f32, p.shape, storage.back().data()});
    }
  }
  static const int64_t step = 7;
  views.push_back({"global_step", DType::i64, Shape{}, &step});
  EXPECT_TRUE(save_checkpoint(t.dir, 7, checkpoint_metadata(t.meta), views).ok());
  return t;
}

float first_value(const TensorEntry& entry) {
  float value;
  std::memcpy(&value, entry.bytes.data(), sizeof value);
  return value;
}

TEST(InferenceModel, EmaShadowsAndMovingStatistics) {
  const TinyCheckpoint t = write_tiny("ema");
  Result<InferenceModel> model = load_for_inference(t.dir, "");
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->global_step, 7);
  EXPECT_EQ(model->checkpoint, checkpoint_prefix(t.dir, 7));
  EXPECT_EQ(model->meta.num_classes, 10);
  EXPECT_FALSE(model->options.training);
  ASSERT_EQ(model->weights.size(), t.graph.params.size());
  for (const ParamInfo& p : t.graph.params) {
    const TensorEntry& w = model->weights.at(p.name);
    EXPECT_EQ(w.shape, p.shape) << p.name;
    const float expected = p.trainable ? 2.f : p.name.ends_with("moving_mean") ? 4.f : 3.f;
    EXPECT_EQ(first_value(w), expected) << p.name;
  }
  Result<Graph> graph = build_inference_graph(*model, 4);
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ(graph->values[graph->images].shape, (Shape{4, 75, 75, 3}));
  fs::remove_all(t.dir);
}

TEST(InferenceModel, MissingTensorAndNoCheckpointAreErrors) {
  const std::string missing = "InceptionV3/Logits/Conv2d_1c_1x1/biases";
  const TinyCheckpoint t = write_tiny("missing", missing);
  Result<InferenceModel> model = load_for_inference(t.dir, "");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find(missing), std::string::npos);
  EXPECT_NE(model.status().message().find(t.dir), std::string::npos);
  fs::remove_all(t.dir);

  Result<InferenceModel> none = load_for_inference(t.dir + "_empty", "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(t.dir + "_empty"), std::string::npos);
}

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x";
}

TEST(NewestServable, HighestNumberedVersionHoldingModelSafetensors) {
  const std::string dir =
      (fs::temp_directory_path() / ("ic_servable_" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  Result<std::optional<std::string>> none = newest_servable(dir);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none->has_value());

  touch(dir + "/9/model.safetensors");
  touch(dir + "/10/model.safetensors");       // numerically newest, lexically older than "9"
  touch(dir + "/11/saved_model.pb");          // no model.safetensors: skipped
  touch(dir + "/temp-12/model.safetensors");  // an export being written locally
  touch(dir + "/13x/model.safetensors");      // not a version
  touch(dir + "/14");                         // a file, not a version directory
  Result<std::optional<std::string>> newest = newest_servable(dir);
  ASSERT_TRUE(newest.ok()) << newest.status().message();
  ASSERT_TRUE(newest->has_value());
  EXPECT_EQ(**newest, dir + "/10/model.safetensors");
  EXPECT_EQ(export_version_of(**newest), std::optional<int64_t>(10));
  EXPECT_EQ(export_version_of(dir + "/13x/model.safetensors"), std::nullopt);
  EXPECT_EQ(export_version_of(dir + "/10/model.onnx"), std::optional<int64_t>(10));
  EXPECT_EQ(export_version_of(checkpoint_prefix(dir, 10)), std::nullopt);

  // A `checkpoint` file makes it a training directory: its checkpoint wins (and one it names
  // that does not exist is an error, never a fall-back to the exports).
  std::ofstream(dir + "/checkpoint") << "model_checkpoint_path: \"model.ckpt-5\"\n";
  EXPECT_FALSE(newest_servable(dir).ok());
  fs::remove_all(dir);
}

TEST(NewestServable, AnExportBaseDirectoryLoadsLikeTheCheckpoint) {
  const TinyCheckpoint t = write_tiny("export");
  Result<InferenceModel> model = load_for_inference(t.dir, "");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const std::string base = t.dir + "/export";
  Result<std::string> first = export_trained_model(*model, base, ExportFormat::safetensors);
  ASSERT_TRUE(first.ok()) << first.status().message();
  // A SavedModel version is servable too, but an older one than the newest safetensors.
  ASSERT_TRUE(export_trained_model(*model, base, ExportFormat::saved_model).ok());
  Result<std::string> second = export_trained_model(*model, base, ExportFormat::safetensors);
  ASSERT_TRUE(second.ok()) << second.status().message();

  Result<InferenceModel> exported = load_for_inference(base, "");
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_EQ(exported->checkpoint, *second + "/model.safetensors");
  EXPECT_EQ(export_version_of(exported->checkpoint), std::stoll(fs::path(*second).filename()));
  EXPECT_EQ(exported->global_step, 7);
  // A missing directory holds nothing; an unknown scheme is an error naming the path, never a
  // local folder named "s3:".
  Result<std::optional<std::string>> missing = newest_servable(t.dir + "/no_such_dir");
  ASSERT_TRUE(missing.ok()) << missing.status().message();
  EXPECT_FALSE(missing->has_value());
  Result<std::string> s3 = export_trained_model(*model, "s3://bucket/x", ExportFormat::safetensors);
  ASSERT_FALSE(s3.ok());
  EXPECT_NE(s3.status().message().find("s3://bucket/x"), std::string::npos)
      << s3.status().message();
  EXPECT_FALSE(fs::exists("s3:"));
  ASSERT_EQ(exported->weights.size(), model->weights.size());
  for (const auto& [name, entry] : model->weights) {
    EXPECT_EQ(exported->weights.at(name).bytes, entry.bytes) << name;
  }
  fs::remove_all(t.dir);
}

}  // namespace
}  // namespace ic
