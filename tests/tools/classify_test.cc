// classify on a known tiny model: every weight zero except the logits biases, so every input's
// logits are exactly those biases and the top-5 and probabilities are known in advance. The
// raw biases and their EMA shadows differ, so the output also shows which ones were used.
#include "infer/classify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include "backend/backend.h"
#include "data/image_codec.h"
#include "data/preprocessing.h"
#include "infer/npy.h"
#include "io/checkpoint_dir.h"
#include "models/model.h"
#include "tools/tool_runner.h"
#include "train/model_state.h"

namespace ic {
namespace {

using testing::run_tool;
using testing::TempDir;

constexpr int kSize = 75;
constexpr int kClasses = 10;
const char* kBiases = "InceptionV3/Logits/Conv2d_1c_1x1/biases";

// EMA biases (what classify must use) and raw biases (what it must not).
const std::vector<float> kEma = {0.1f, 2.0f, -1.0f, 3.5f, 0.0f, 1.0f, -2.0f, 3.0f, 0.5f, 2.5f};
const std::vector<float> kRaw = {9.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 8.0f};

// A tiny Inception v3 (depth multiplier 0.1, kSize, kClasses) with random initial values and
// the given `step`, saved to `model_dir` as trained with `preprocessing`; `edit(name, bytes)`
// may change each tensor's bytes first.
void write_tiny_model(const std::string& model_dir, int64_t step,
                      PreprocessOptions::Kind preprocessing,
                      const std::function<void(const std::string&, std::string&)>& edit) {
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  auto m = default_model_options("inception_v3");
  ASSERT_TRUE(m.ok());
  m->batch_size = 1;
  m->height = m->width = kSize;
  m->num_classes = kClasses;
  m->depth_multiplier = 0.1f;
  auto graph = build_model(*m);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto state = ModelState::create(**backend, *graph, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(state.ok());
  ASSERT_TRUE((*state)->initialize(3).ok());
  (*state)->global_step = step;
  std::vector<TensorView> views = (*state)->checkpoint_tensors();
  std::vector<std::string> storage(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    TensorView& v = views[i];
    const size_t bytes = static_cast<size_t>(v.shape.numel()) * dtype_size(v.dtype);
    storage[i].assign(static_cast<const char*>(v.data), bytes);
    edit(v.name, storage[i]);
    v.data = storage[i].data();
  }
  CheckpointMeta meta{"inception_v3", kClasses, kSize, kSize, 0.1, ""};
  meta.preprocessing = preprocessing;
  ASSERT_TRUE(save_checkpoint(model_dir, step, checkpoint_metadata(meta), views, 5).ok());
}

// Every weight zero but the logits' biases (raw kRaw, EMA kEma): the logits are the biases.
void write_known_model(const std::string& model_dir) {
  write_tiny_model(model_dir, 42, PreprocessOptions::Kind::inception,
                   [](const std::string& name, std::string& bytes) {
                     const bool stat = name.find("moving_") != std::string::npos;
                     if (name != "global_step" && !stat)
                       std::fill(bytes.begin(), bytes.end(), '\0');
                     if (name == kBiases) std::memcpy(bytes.data(), kRaw.data(), bytes.size());
                     if (name == std::string(kBiases) + "/ExponentialMovingAverage")
                       std::memcpy(bytes.data(), kEma.data(), bytes.size());
                   });
}

TEST(Classify, KnownTinyModelGivesItsBiasesTopFive) {
  TempDir dir;
  write_known_model(dir.sub("model"));

  // A PNG of another size (preprocessing resizes it) and a preprocessed .npy of 2 images.
  RgbImage image{40, 52, std::vector<uint8_t>(40 * 52 * 3)};
  std::mt19937 rng(1);
  for (uint8_t& p : image.pixels) p = static_cast<uint8_t>(rng() & 0xff);
  auto png = encode_png(image);
  ASSERT_TRUE(png.ok());
  std::ofstream(dir.sub("image.png"), std::ios::binary) << *png;
  NpyArray arrays{{2, kSize, kSize, 3}, std::vector<float>(2 * kSize * kSize * 3, 0.25f)};
  ASSERT_TRUE(write_npy(dir.sub("inputs.npy"), arrays).ok());
  std::ofstream(dir.sub("labels.txt")) << "3 three\n7\tseven\n9 nine\n1 one\n";

  auto out = run_tool("classify", "--model_dir=" + dir.sub("model") +
                                      " --labels_file=" + dir.sub("labels.txt") +
                                      " --logits_out=" + dir.sub("logits.npy") + " " +
                                      dir.sub("image.png") + " " + dir.sub("inputs.npy"));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_TRUE(out.contains("(global step 42)")) << out.output;
  EXPECT_TRUE(out.contains(dir.sub("inputs.npy") + "[1]")) << out.output;

  // Independent expectation: softmax of the EMA biases, top 5 = labels 3, 7, 9, 1, 5.
  double sum = 0;
  for (float b : kEma) sum += std::exp(double{b});
  auto line = [&](int label, const char* name) {
    char text[64];
    std::snprintf(text, sizeof text, "  %.6f  %d%s%s\n", std::exp(double{kEma[label]}) / sum, label,
                  name[0] ? "  " : "", name);
    return std::string(text);
  };
  const std::string expected =
      line(3, "three") + line(7, "seven") + line(9, "nine") + line(1, "one") + line(5, "");
  EXPECT_TRUE(out.contains(dir.sub("image.png") + "\n" + expected)) << out.output << expected;
  EXPECT_TRUE(out.contains(dir.sub("inputs.npy") + "[0]\n" + expected)) << out.output;

  auto logits = read_npy(dir.sub("logits.npy"));
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  ASSERT_EQ(logits->shape, (std::vector<int64_t>{3, kClasses}));
  for (int row = 0; row < 3; ++row) {
    for (int c = 0; c < kClasses; ++c) {
      EXPECT_FLOAT_EQ(logits->data[row * kClasses + c], kEma[c]) << row << "," << c;
    }
  }

  // The same checkpoint named directly.
  auto latest = latest_checkpoint(dir.sub("model"));
  ASSERT_TRUE(latest.ok() && latest->has_value());
  auto direct = run_tool("classify", "--checkpoint=" + **latest + " " + dir.sub("inputs.npy"));
  ASSERT_EQ(direct.exit_code, 0) << direct.output;
  EXPECT_TRUE(direct.contains(line(3, ""))) << direct.output;
  // The default format is TensorFlow's: the prefix, or its .index file, names it.
  EXPECT_EQ(**latest, dir.sub("model/model.ckpt-42"));
  auto by_index =
      run_tool("classify", "--checkpoint=" + **latest + ".index " + dir.sub("inputs.npy"));
  ASSERT_EQ(by_index.exit_code, 0) << by_index.output;
  EXPECT_TRUE(by_index.contains(line(3, ""))) << by_index.output;
}

// Images go through the evaluation preprocessing the checkpoint records: a model trained with
// VGG's (DenseNet's and SqueezeNet's default) gets a PNG's VGG-preprocessed pixels, not
// Inception's, in classify as in serve (serve/api.cc, the same metadata).
TEST(Classify, ImagesGetTheCheckpointsPreprocessing) {
  TempDir dir;
  // Random weights: the logits follow the pixels.
  write_tiny_model(dir.sub("model"), 1, PreprocessOptions::Kind::vgg,
                   [](const std::string&, std::string&) {});
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());

  RgbImage image{40, 52, std::vector<uint8_t>(40 * 52 * 3)};
  std::mt19937 rng(4);
  for (uint8_t& p : image.pixels) p = static_cast<uint8_t>(rng() & 0xff);
  auto png = encode_png(image);
  ASSERT_TRUE(png.ok());
  std::ofstream(dir.sub("image.png"), std::ios::binary) << *png;
  for (auto kind : {PreprocessOptions::Kind::vgg, PreprocessOptions::Kind::inception}) {
    PreprocessOptions pre;
    pre.kind = kind;
    pre.training = false;
    pre.height = pre.width = kSize;
    NpyArray array{{kSize, kSize, 3}, std::vector<float>(kSize * kSize * 3)};
    Rng draws(0);
    PreprocessScratch scratch;
    ASSERT_TRUE(preprocess_image(*png, {}, pre, draws, &scratch, array.data.data()).ok());
    const bool vgg = kind == PreprocessOptions::Kind::vgg;
    ASSERT_TRUE(write_npy(dir.sub(vgg ? "vgg.npy" : "inception.npy"), array).ok());
  }

  ClassifyOptions options;
  options.model_dir = dir.sub("model");
  options.inputs = {dir.sub("image.png"), dir.sub("vgg.npy"), dir.sub("inception.npy")};
  auto result = classify(options, **backend);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->logits.size(), 3u * kClasses);
  double vgg_gap = 0, inception_gap = 0;
  for (int c = 0; c < kClasses; ++c) {
    const float png_logit = result->logits[c];
    vgg_gap = std::max(vgg_gap, double{std::fabs(png_logit - result->logits[kClasses + c])});
    inception_gap =
        std::max(inception_gap, double{std::fabs(png_logit - result->logits[2 * kClasses + c])});
  }
  EXPECT_EQ(vgg_gap, 0.0) << "the PNG's logits are not its VGG-preprocessed array's";
  EXPECT_GT(inception_gap, 1e-3) << "Inception's preprocessing gives the same logits: no test";
}

TEST(Classify, ErrorsNameWhatIsWrong) {
  TempDir dir;
  auto none = run_tool("classify", "--model_dir=" + dir.path() + " x.jpg");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_TRUE(none.contains("no checkpoint in " + dir.path())) << none.output;

  write_known_model(dir.sub("model"));
  NpyArray wrong{{1, 8, 8, 3}, std::vector<float>(8 * 8 * 3)};
  ASSERT_TRUE(write_npy(dir.sub("small.npy"), wrong).ok());
  auto bad = run_tool("classify", "--model_dir=" + dir.sub("model") + " " + dir.sub("small.npy"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(bad.contains(".npy shape must be [75,75,3]")) << bad.output;

  auto flag = run_tool("classify", "--top=3 x.jpg");
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_TRUE(flag.contains("unknown command-line flag '--top=3'")) << flag.output;
}

// A NaN or an infinity in a preprocessed input gives NaN probabilities that look like a
// result: refused, naming the file and where the first one is.
TEST(Classify, NonFiniteNpyValuesAreRefusedWithTheirPosition) {
  TempDir dir;
  write_known_model(dir.sub("model"));
  const size_t image = kSize * kSize * 3;
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity()}) {
    NpyArray inputs{{2, kSize, kSize, 3}, std::vector<float>(2 * image, 0.25f)};
    // Image 1, row 4, column 7, channel 2.
    const size_t flat = image + (4 * kSize + 7) * 3 + 2;
    inputs.data[flat] = bad;
    inputs.data[flat + 5] = bad;  // only the first is named
    ASSERT_TRUE(write_npy(dir.sub("bad.npy"), inputs).ok());
    auto out = run_tool("classify", "--model_dir=" + dir.sub("model") + " " + dir.sub("bad.npy"));
    EXPECT_EQ(out.exit_code, 2) << out.output;
    EXPECT_TRUE(out.contains(dir.sub("bad.npy"))) << out.output;
    EXPECT_TRUE(out.contains("flat index " + std::to_string(flat))) << out.output;
    EXPECT_TRUE(out.contains("[1,4,7,2] of shape [2,75,75,3]")) << out.output;
    EXPECT_TRUE(out.contains("not finite")) << out.output;
    EXPECT_FALSE(out.contains("nan%")) << out.output;  // no probabilities were printed
  }
}

TEST(Classify, PrecisionInt8NeedsAnInt8ExportAndBfloat16AnswersAsFloat32) {
  TempDir dir;
  write_known_model(dir.sub("model"));
  NpyArray arrays{{2, kSize, kSize, 3}, std::vector<float>(2 * kSize * kSize * 3, 0.25f)};
  ASSERT_TRUE(write_npy(dir.sub("inputs.npy"), arrays).ok());
  const std::string common = "--model_dir=" + dir.sub("model") + " " + dir.sub("inputs.npy");

  auto int8 = run_tool("classify", "--precision=int8 " + common);
  EXPECT_EQ(int8.exit_code, 2) << int8.output;
  EXPECT_TRUE(int8.contains(dir.sub("model/model.ckpt-42") + " is not an int8 export"))
      << int8.output;

  auto bad = run_tool("classify", "--precision=int4 " + common);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(bad.contains("allowed: float32, bfloat16, int8")) << bad.output;

  auto f32 =
      run_tool("classify", "--precision=float32 --logits_out=" + dir.sub("f32.npy") + " " + common);
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  auto bf16 = run_tool("classify",
                       "--precision=bfloat16 --logits_out=" + dir.sub("bf16.npy") + " " + common);
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  // The notice names the backend, whose description says whether bf16 is real here.
  EXPECT_TRUE(bf16.contains("--precision=bfloat16 on " + (*backend)->description())) << bf16.output;
  // It also says how many values the graph holds in bf16: none where bf16 computes in float32.
  EXPECT_TRUE(bf16.contains((*backend)->has_native_bf16() ? "classify: bfloat16: "
                                                          : "classify: bfloat16: 0 values in bf16"))
      << bf16.output;
  auto expected = read_npy(dir.sub("f32.npy"));
  auto got = read_npy(dir.sub("bf16.npy"));
  ASSERT_TRUE(expected.ok() && got.ok());
  ASSERT_EQ(got->data.size(), expected->data.size());
  // Computing in float32 (no native bf16) gives the same logits to float32's rounding (each
  // process times its own convolution plans, which may round differently); real bf16 rounds.
  const float tolerance = (*backend)->has_native_bf16() ? 0.05f : 1e-4f;
  for (size_t i = 0; i < got->data.size(); ++i)
    EXPECT_NEAR(got->data[i], expected->data[i], tolerance * (1.f + std::fabs(expected->data[i])))
        << i;
}

TEST(Classify, NoInputsAndABadTopKAreInvalidArguments) {
  TempDir dir;
  write_known_model(dir.sub("model"));
  auto none = run_tool("classify", "--model_dir=" + dir.sub("model"));
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_TRUE(none.contains("no inputs (give image or .npy files)")) << none.output;

  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  ClassifyOptions options;
  options.model_dir = dir.sub("model");
  Result<ClassifyResult> empty = classify(options, **backend);
  EXPECT_EQ(empty.status().code(), StatusCode::invalid_argument);
  options.inputs = {"x.npy"};
  options.top_k = 0;
  Result<ClassifyResult> top = classify(options, **backend);
  EXPECT_EQ(top.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(top.status().message().find("bad value 0 for top_k"), std::string::npos)
      << top.status().message();
}

}  // namespace
}  // namespace ic
