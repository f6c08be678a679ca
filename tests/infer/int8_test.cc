// int8 post-training quantization end to end on a tiny Inception v3: calibration on TFRecord
// images, the int8 export written and read back (the integers and scales survive exactly),
// bad int8 files refused with the file named, and the int8 model answering close to float32.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "data/fake_imagenet.h"
#include "infer/calibration.h"
#include "infer/model_export.h"
#include "io/checkpoint_dir.h"
#include "io/safetensors.h"
#include "runtime/inference_runner.h"
#include "runtime/precision.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

// Two runners' logits on the same two random images (pixels in [-1, 1]).
struct LogitGap {
  float worst = 0;  // max |a - b|
  float scale = 0;  // max |a|
};
LogitGap logit_gap(InferenceRunner& a, InferenceRunner& b, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(static_cast<size_t>(2 * a.image_floats()));
  for (float& v : images) v = pixel(rng);
  std::vector<float> want(static_cast<size_t>(2 * a.num_classes())), got(want.size());
  a.run(2, images.data(), want.data());
  b.run(2, images.data(), got.data());
  LogitGap gap;
  for (float v : want) gap.scale = std::max(gap.scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i)
    gap.worst = std::max(gap.worst, std::fabs(got[i] - want[i]));
  return gap;
}

class Int8Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = (fs::temp_directory_path() / ("ic_int8_" + std::to_string(getpid()))).string();
    fs::remove_all(root_);
    FakeImageNetOptions data;
    data.output_dir = root_ + "/data";
    data.num_train_images = 24;
    data.num_validation_images = 8;
    data.train_shards = 2;
    data.validation_shards = 1;
    data.image_size = 75;
    data.num_classes = 6;
    ASSERT_TRUE(make_fake_imagenet(data).ok());
    // A step-1 checkpoint with random weights and positive moving variances.
    const std::string dir = root_ + "/model";
    fs::create_directories(dir);
    const CheckpointMeta meta{"inception_v3", 7, 75, 75, 0.25, "--data_dir=" + data.output_dir};
    const Graph graph = build_model(inference_model_options(meta, 1).value()).value();
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.f, 0.1f);
    std::uniform_real_distribution<float> positive(0.5f, 1.5f);
    std::vector<std::vector<float>> storage;
    std::vector<TensorView> views;
    storage.reserve(graph.params.size());
    for (const ParamInfo& p : graph.params) {
      storage.emplace_back(p.shape.numel());
      const bool variance = p.name.ends_with("moving_variance");
      for (float& v : storage.back()) v = variance ? positive(rng) : normal(rng);
      views.push_back({p.name, DType::f32, p.shape, storage.back().data()});
    }
    static const int64_t step = 1;
    views.push_back({"global_step", DType::i64, Shape{}, &step});
    ASSERT_TRUE(save_checkpoint(dir, 1, checkpoint_metadata(meta), views).ok());
    model_ = load_for_inference(dir, "").value();
    backend_ = make_backend({}).value();
  }
  static void TearDownTestSuite() {
    fs::remove_all(root_);
    model_.reset();
    backend_.reset();
  }
  static QuantizationTable calibrated() {
    CalibrationOptions options;
    options.data_dir = training_data_dir(model_->meta);
    options.images = 10;
    options.batch_size = 4;
    Result<QuantizationTable> table = calibrate_int8(*backend_, *model_, options);
    EXPECT_TRUE(table.ok()) << table.status().message();
    return table.ok() ? *table : QuantizationTable{};
  }
  // The tiny model with calibrated int8 scales (an int8 export's contents).
  static InferenceModel int8_model() {
    InferenceModel model = *model_;
    model.int8 = calibrated();
    return model;
  }
  // int8 graph options for `model` with the backend's timing off: every named layer in int8,
  // unless a test sets int8_pays itself.
  static InferenceGraphOptions untimed_int8_options(const InferenceModel& model) {
    InferenceGraphOptions options =
        graph_options_for(model, InferencePrecision::int8, *backend_).value();
    options.time_algorithms = false;
    return options;
  }
  static inline std::string root_;
  static inline std::optional<InferenceModel> model_;
  static inline std::unique_ptr<Backend> backend_;
};

TEST_F(Int8Test, CalibrationQuantizesEveryLayerWhoseInputIsNotNegative) {
  const QuantizationTable table = calibrated();
  EXPECT_EQ(table.calibration_images, 10);
  EXPECT_EQ(table.calibration_data, root_ + "/data/train-*");
  // The first convolution reads the images, in [-1, 1]: it stays float32. Every other
  // convolution of the main path reads ReLU outputs (or their pools and concatenations).
  EXPECT_EQ(table.layers.count("InceptionV3/Conv2d_1a_3x3"), 0u);
  EXPECT_EQ(table.layers.count("InceptionV3/Conv2d_2a_3x3"), 1u);
  EXPECT_EQ(table.layers.count("InceptionV3/Logits/Conv2d_1c_1x1"), 1u);
  EXPECT_GT(table.layers.size(), 90u);
  for (const auto& [name, layer] : table.layers) {
    EXPECT_GT(layer.input_scale, 0.f) << name;
    EXPECT_FALSE(layer.weight_scales.empty()) << name;
  }
}

TEST_F(Int8Test, CalibrationWithoutImagesNamesTheDirectory) {
  CalibrationOptions options;
  options.data_dir = root_ + "/nowhere";
  Result<QuantizationTable> table = calibrate_int8(*backend_, *model_, options);
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find(root_ + "/nowhere"), std::string::npos)
      << table.status().message();
  options.data_dir = root_ + "/data";
  options.file_prefix = "nothing-";
  table = calibrate_int8(*backend_, *model_, options);
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("nothing-"), std::string::npos);
}

TEST_F(Int8Test, ExportReadsBackWithTheSameIntegersAndScales) {
  InferenceModel model = int8_model();
  Result<std::string> written = export_trained_model(model, root_ + "/export", ExportFormat::int8);
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_TRUE(fs::exists(*written + "/model.onnx"));
  Result<InferenceModel> loaded = load_for_inference(*written, *written + "/model.safetensors");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_TRUE(loaded->int8.has_value());
  EXPECT_EQ(loaded->int8->calibration_images, 10);
  ASSERT_EQ(loaded->int8->layers.size(), model.int8->layers.size());
  for (const auto& [name, layer] : model.int8->layers) {
    const LayerQuantization& back = loaded->int8->layers.at(name);
    EXPECT_EQ(back.input_scale, layer.input_scale) << name;
    ASSERT_EQ(back.weight_scales, layer.weight_scales) << name;
    // The dequantized weights are within half a step of the float ones and quantize back to
    // the same integers.
    const TensorEntry& before = model.weights.at(name + "/weights");
    const TensorEntry& after = loaded->weights.at(name + "/weights");
    ASSERT_EQ(after.dtype, DType::f32);
    ASSERT_EQ(after.bytes.size(), before.bytes.size());
    const auto* w = reinterpret_cast<const float*>(before.bytes.data());
    const auto* d = reinterpret_cast<const float*>(after.bytes.data());
    const size_t channels = layer.weight_scales.size();
    for (size_t k = 0; k < before.bytes.size() / 4; ++k) {
      const float s = layer.weight_scales[k % channels];
      ASSERT_LE(std::fabs(w[k] - d[k]), 0.5f * s * 1.0001f) << name << " " << k;
      ASSERT_EQ(std::nearbyint(d[k] / s), std::nearbyint(w[k] / s)) << name << " " << k;
    }
  }
  // The file itself holds int8 weights.
  Result<SafetensorsFile> file = read_safetensors(*written + "/model.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->metadata.at("precision"), "int8");
  const TensorEntry* weights = file->find("InceptionV3/Conv2d_2a_3x3/weights");
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->dtype, DType::s8);
  ASSERT_NE(file->find("InceptionV3/Conv2d_1a_3x3/weights"), nullptr);
  EXPECT_EQ(file->find("InceptionV3/Conv2d_1a_3x3/weights")->dtype, DType::f32);
}

TEST_F(Int8Test, BadScalesAreRefusedNamingTheFile) {
  InferenceModel model = int8_model();
  model.int8->layers.begin()->second.input_scale = -1.f;
  const std::string path = root_ + "/bad.safetensors";
  ASSERT_TRUE(write_int8_export(model, path).ok());
  Result<InferenceModel> loaded = load_for_inference("", path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::data_loss);
  EXPECT_NE(loaded.status().message().find(path), std::string::npos);
  EXPECT_NE(loaded.status().message().find("not a positive scale"), std::string::npos)
      << loaded.status().message();
}

TEST_F(Int8Test, Int8RunnerAnswersCloseToFloat32) {
  InferenceModel model = int8_model();
  const std::vector<int64_t> sizes = {2};
  auto f32 = InferenceRunner::create(*backend_, model, sizes).value();
  Result<std::unique_ptr<InferenceRunner>> int8 = InferenceRunner::create(
      *backend_, model, sizes,
      graph_options_for(model, InferencePrecision::int8, *backend_).value());
  ASSERT_TRUE(int8.ok()) << int8.status().message();
  const auto [worst, scale] = logit_gap(*f32, **int8, 3);
  // 94 layers of 7-bit activations and 8-bit weights on random weights: a few percent.
  EXPECT_LT(worst, 0.1f * scale) << "worst " << worst << " of " << scale;
  EXPECT_GT(worst, 0.f) << "the int8 graph computed exactly float32's logits: not quantized?";
}

// u8 between the int8 layers (convolutions writing u8, pools and concatenations of u8:
// pools_and_concats_in_u8, write_int8_outputs) answers as the graph with a Quantize node before
// every int8 layer: bit for bit but for the average pools, which round their mean to a level of
// their input's scale (tests/graph/u8_dataflow_pass_test.cc checks the exact part exactly).
TEST_F(Int8Test, U8BetweenLayersStaysCloseToTheQuantizeNodes) {
  InferenceModel model = int8_model();
  const std::vector<int64_t> sizes = {2};
  InferenceGraphOptions chained = untimed_int8_options(model);
  InferenceGraphOptions separate = chained;
  separate.int8_outputs = false;
  auto with_u8 = InferenceRunner::create(*backend_, model, sizes, chained);
  auto with_quantize = InferenceRunner::create(*backend_, model, sizes, separate);
  ASSERT_TRUE(with_u8.ok()) << with_u8.status().message();
  ASSERT_TRUE(with_quantize.ok()) << with_quantize.status().message();
  const InferencePassStats& stats = (*with_u8)->pass_stats();
  EXPECT_GT(stats.int8_outputs, 20) << "the tiny Inception v3's branches chain int8 convolutions";
  EXPECT_GE(stats.u8_concats, 8) << "Mixed_5b to Mixed_7b concatenate u8";
  EXPECT_GE(stats.u8_pools, 10) << "the stem's max pools and the blocks' pools run on u8";
  EXPECT_EQ((*with_quantize)->pass_stats().int8_outputs, 0);
  EXPECT_EQ((*with_quantize)->pass_stats().u8_concats, 0);
  const auto [worst, scale] = logit_gap(**with_quantize, **with_u8, 5);
  EXPECT_LT(worst, 0.05f * scale) << "worst " << worst << " of " << scale;
}

// Layers the backend turns down (Backend::int8_conv_pays; here those wider than 1x1, as the
// Winograd ones are on a CPU without VNNI) stay float32 among the int8 ones, and the graph
// around them still answers close to float32.
TEST_F(Int8Test, LayersKeptInFloat32AnswerAmongInt8Ones) {
  InferenceModel model = int8_model();
  const std::vector<int64_t> sizes = {2};
  InferenceGraphOptions options = untimed_int8_options(model);
  int accepted = 0, refused = 0;
  options.int8_pays = [&](const Conv2dDesc& d) -> Result<bool> {
    const bool pointwise = d.kernel_h == 1 && d.kernel_w == 1;
    ++(pointwise ? accepted : refused);
    return pointwise;
  };
  auto mixed = InferenceRunner::create(*backend_, model, sizes, options);
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  EXPECT_GT(accepted, 20);
  EXPECT_GT(refused, 20);
  EXPECT_EQ((*mixed)->pass_stats().int8_layers_in_float32, refused);
  int int8_convolutions = 0;
  for (const Node& node : (*mixed)->graph(2).nodes)
    if (const auto* conv = std::get_if<Conv2dDesc>(&node.desc); conv && conv->int8) {
      ++int8_convolutions;
      EXPECT_EQ(conv->kernel_h * conv->kernel_w, 1) << node.name;
    }
  EXPECT_EQ(int8_convolutions, accepted);

  auto f32 = InferenceRunner::create(*backend_, model, sizes).value();
  const auto [worst, scale] = logit_gap(*f32, **mixed, 9);
  EXPECT_LT(worst, 0.1f * scale) << "worst " << worst << " of " << scale;
  EXPECT_GT(worst, 0.f) << "no layer computed in int8";
}

// Timed graphs ask the backend which int8 layers pay; untimed ones run every layer named.
TEST_F(Int8Test, OnlyTimedGraphsAskWhetherInt8Pays) {
  InferenceModel model = int8_model();
  EXPECT_TRUE(graph_options_for(model, InferencePrecision::int8, *backend_).value().int8_pays);
  InferenceGraphOptions untimed;
  untimed.time_algorithms = false;
  EXPECT_FALSE(
      graph_options_for(model, InferencePrecision::int8, *backend_, untimed).value().int8_pays);
  InferenceGraphOptions float32 =
      graph_options_for(model, InferencePrecision::int8, *backend_).value();
  float32 = graph_options_for(model, InferencePrecision::float32, *backend_, float32).value();
  EXPECT_FALSE(float32.int8_pays);
  EXPECT_FALSE(float32.int8);
}

TEST_F(Int8Test, Int8NeedsAnInt8Export) {
  Result<InferenceGraphOptions> options =
      graph_options_for(*model_, InferencePrecision::int8, *backend_);
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(options.status().message().find("export_model --format=int8"), std::string::npos);
}

}  // namespace
}  // namespace ic
