// load_trained_model: the EMA shadow wins over the raw weights, batch-norm statistics are read
// as they are, the step and metadata come back, and a missing or mis-shaped tensor is an
// error naming the checkpoint.
#include "infer/trained_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/checkpoint_dir.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

struct TinyCheckpoint {
  std::string dir;
  CheckpointMeta meta;
  Graph graph;
};

// Writes a step-7 checkpoint of a tiny inception_v3 where every raw weight is 1, every EMA
// shadow 2 and every state tensor 3; `skip` leaves one tensor out.
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
    // Shadows for weights (2) and for moving statistics (4), as the trainer writes them.
    storage.emplace_back(p.shape.numel(), p.trainable ? 2.f : 4.f);
    views.push_back(
        {p.name + "/ExponentialMovingAverage", DType::f32, p.shape, storage.back().data()});
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

TEST(TrainedModel, EmaShadowsAndMovingStatistics) {
  const TinyCheckpoint t = write_tiny("ema");
  Result<TrainedModel> model = load_trained_model(t.dir, "");
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->global_step, 7);
  EXPECT_EQ(model->checkpoint, checkpoint_prefix(t.dir, 7));
  EXPECT_EQ(model->meta.num_classes, 10);
  EXPECT_FALSE(model->options.training);
  ASSERT_EQ(model->weights.size(), t.graph.params.size());
  for (const ParamInfo& p : t.graph.params) {
    const TensorEntry& w = model->weights.at(p.name);
    EXPECT_EQ(w.shape, p.shape) << p.name;
    EXPECT_EQ(first_value(w), p.trainable ? 2.f : 4.f) << p.name;
  }
  Result<Graph> graph = build_inference_graph(*model, 4);
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ(graph->values[graph->images].shape, (Shape{4, 75, 75, 3}));
  fs::remove_all(t.dir);
}

TEST(TrainedModel, MissingTensorAndNoCheckpointAreErrors) {
  const std::string missing = "InceptionV3/Logits/Conv2d_1c_1x1/biases";
  const TinyCheckpoint t = write_tiny("missing", missing);
  Result<TrainedModel> model = load_trained_model(t.dir, "");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find(missing), std::string::npos);
  EXPECT_NE(model.status().message().find(t.dir), std::string::npos);
  fs::remove_all(t.dir);

  Result<TrainedModel> none = load_trained_model(t.dir + "_empty", "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(t.dir + "_empty"), std::string::npos);
}

}  // namespace
}  // namespace ic
