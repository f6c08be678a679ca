// ModelState's arenas and their checkpoint form (TF-slim names, RMSProp/EMA slots, global_step),
// the initialisers' distributions.
#include "train/model_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "backend/backend.h"
#include "runtime/param_init.h"

namespace ic {
namespace {

// conv 3x3x3x8 (decayed) + BN beta + moving stats, global pool, dense 8->classes (+ biases).
Graph small_graph(int64_t classes = 5) {
  GraphBuilder b(true);
  ValueId x = b.images(Shape{2, 8, 8, 3});
  GraphBuilder::ConvOptions conv;
  conv.filters = 8;
  conv.kernel_h = conv.kernel_w = 3;
  x = b.conv2d(x, conv, "Net/Conv");
  x = b.batch_norm(x, GraphBuilder::BatchNormOptions{}, "Net/Conv");
  x = b.global_avg_pool(x, "Net/Pool");
  x = b.dense(x, classes, ParamInit{ParamInit::Kind::truncated_normal, 0.01f}, "Net/Logits");
  return b.finish();
}

const float* find(const std::vector<TensorView>& views, const std::string& name) {
  for (const TensorView& v : views) {
    if (v.name == name) return static_cast<const float*>(v.data);
  }
  return nullptr;
}

TEST(ModelState, CheckpointNamesAndInitialSlotValues) {
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  Graph graph = small_graph();
  auto state = ModelState::create(**backend, graph, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(state.ok()) << state.status().message();
  ASSERT_TRUE((*state)->initialize(5).ok());
  std::vector<TensorView> views = (*state)->checkpoint_tensors();
  std::set<std::string> names;
  for (const TensorView& v : views) names.insert(v.name);
  for (const ParamInfo& p : graph.params) {
    EXPECT_TRUE(names.count(p.name)) << p.name;
    EXPECT_TRUE(names.count(p.name + "/ExponentialMovingAverage")) << p.name;
    EXPECT_EQ(names.count(p.name + "/RMSProp"), p.trainable ? 1u : 0u) << p.name;
    EXPECT_EQ(names.count(p.name + "/RMSProp_1"), p.trainable ? 1u : 0u) << p.name;
  }
  EXPECT_TRUE(names.count("global_step"));
  const float* kernel = find(views, "Net/Conv/weights");
  const float* shadow = find(views, "Net/Conv/weights/ExponentialMovingAverage");
  const float* ms = find(views, "Net/Conv/weights/RMSProp");
  const float* mom = find(views, "Net/Conv/weights/RMSProp_1");
  const float* variance = find(views, "Net/Conv/BatchNorm/moving_variance");
  ASSERT_TRUE(kernel && shadow && ms && mom && variance);
  for (int i = 0; i < 3 * 3 * 3 * 8; ++i) {
    EXPECT_EQ(shadow[i], kernel[i]);
    EXPECT_EQ(ms[i], 1.f);  // TF1 RMSPropOptimizer's "rms" slot starts at ones
    EXPECT_EQ(mom[i], 0.f);
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(variance[i], 1.f);
}

TEST(ModelState, RestoresWhatItSaved) {
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  Graph graph = small_graph();
  auto a = ModelState::create(**backend, graph, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(a.ok() && (*a)->initialize(1).ok());
  (*a)->global_step = 1234;
  // Distinguish the arenas: EMA shadows = 2 * weights.
  std::vector<TensorView> views = (*a)->checkpoint_tensors();
  CheckpointContents file;
  for (const TensorView& v : views) {
    TensorEntry e{v.name, v.dtype, v.shape,
                  std::string(static_cast<const char*>(v.data),
                              static_cast<size_t>(v.shape.numel()) * dtype_size(v.dtype))};
    if (v.name.find("/ExponentialMovingAverage") != std::string::npos) {
      float* f = reinterpret_cast<float*>(e.bytes.data());
      for (int64_t i = 0; i < v.shape.numel(); ++i) f[i] = 2.f * f[i] + 1.f;
    }
    file.tensors.push_back(std::move(e));
  }
  auto b = ModelState::create(**backend, graph, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(b.ok());
  std::vector<std::string> notes;
  ASSERT_TRUE((*b)->restore_for_training(file, "mem", &notes).ok());
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ((*b)->global_step, 1234);
  std::vector<TensorView> again = (*b)->checkpoint_tensors();
  for (const TensorEntry& e : file.tensors) {
    const TensorView* v = nullptr;
    for (const TensorView& candidate : again) {
      if (candidate.name == e.name) v = &candidate;
    }
    ASSERT_NE(v, nullptr) << e.name;
    EXPECT_EQ(std::memcmp(v->data, e.bytes.data(), e.bytes.size()), 0) << e.name;
  }

  // Evaluation loads the shadows into the arenas the eval graph reads.
  auto eval = ModelState::create(**backend, graph, find_optimizer("RMS"), false, false);
  ASSERT_TRUE(eval.ok() && (*eval)->restore_for_eval(file, true, "mem").ok());
  std::vector<float> weights((*eval)->layout().trainable_count);
  (*backend)->download(weights.data(), (*eval)->eval_binding().weights, weights.size() * 4);
  const ParamId kernel = graph.find_param("Net/Conv/weights");
  const float* expected = reinterpret_cast<const float*>(
      file.find("Net/Conv/weights/ExponentialMovingAverage")->bytes.data());
  for (int i = 0; i < 3 * 3 * 3 * 8; ++i) {
    EXPECT_EQ(weights[(*eval)->layout().offset[kernel] + i], expected[i]);
  }

  // A checkpoint without optimizer slots (another --optimizer) still resumes, with a note.
  auto momentum = ModelState::create(**backend, graph, find_optimizer("momentum"), true, true);
  ASSERT_TRUE(momentum.ok());
  ASSERT_TRUE((*momentum)->restore_for_training(file, "mem", &notes).ok());
  EXPECT_EQ(notes.size(), 1u);

  // A missing weight is an error naming it.
  file.tensors.erase(file.tensors.begin());
  Status missing = (*b)->restore_for_training(file, "mem.safetensors", &notes);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("mem.safetensors: checkpoint has no tensor"), std::string::npos);
}

// Every tensor of a state's checkpoint, copied.
CheckpointContents contents_of(ModelState& state) {
  CheckpointContents file;
  for (const TensorView& v : state.checkpoint_tensors()) {
    file.tensors.push_back(
        TensorEntry{v.name, v.dtype, v.shape,
                    std::string(static_cast<const char*>(v.data),
                                static_cast<size_t>(v.shape.numel()) * dtype_size(v.dtype))});
  }
  return file;
}

TEST(ModelState, WarmStartLoadsWhatMatchesAndKeepsTheRestFresh) {
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  Graph five = small_graph(5), seven = small_graph(7);
  auto source = ModelState::create(**backend, five, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(source.ok() && (*source)->initialize(1).ok());
  (*source)->global_step = 99;
  CheckpointContents file = contents_of(**source);
  // Moving statistics that differ from a fresh start (mean 0, variance 1).
  for (TensorEntry& e : file.tensors) {
    if (e.name.find("moving_") != std::string::npos) {
      float* f = reinterpret_cast<float*>(e.bytes.data());
      for (int64_t i = 0; i < e.shape.numel(); ++i) f[i] = 0.5f + static_cast<float>(i);
    }
  }

  auto fresh = ModelState::create(**backend, seven, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(fresh.ok() && (*fresh)->initialize(2).ok());
  const CheckpointContents fresh_values = contents_of(**fresh);
  auto warm = ModelState::create(**backend, seven, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(warm.ok() && (*warm)->initialize(2).ok());
  std::vector<std::string> loaded, skipped;
  Status s = (*warm)->warm_start(file, "src", &loaded, &skipped);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(loaded, (std::vector<std::string>{"Net/Conv/weights", "Net/Conv/BatchNorm/beta",
                                              "Net/Conv/BatchNorm/moving_mean",
                                              "Net/Conv/BatchNorm/moving_variance"}));
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0],
            "Net/Logits/weights (the checkpoint's is float32 [8,5], the model's float32 [8,7])");
  EXPECT_EQ((*warm)->global_step, 0);

  const CheckpointContents after = contents_of(**warm);
  for (const TensorEntry& t : after.tensors) {
    const bool ema = t.name.find("/ExponentialMovingAverage") != std::string::npos;
    const std::string var =
        ema ? t.name.substr(0, t.name.find("/ExponentialMovingAverage")) : t.name;
    const bool was_loaded = std::find(loaded.begin(), loaded.end(), var) != loaded.end();
    const bool slot = t.name.find("/RMSProp") != std::string::npos || t.name == "global_step";
    // Loaded variables and their shadows hold the checkpoint's values; everything else
    // (the new logits, optimizer slots, global_step) what a fresh start with the seed holds.
    const std::string& expected =
        was_loaded && !slot ? file.find(var)->bytes : fresh_values.find(t.name)->bytes;
    EXPECT_EQ(t.bytes, expected) << t.name;
  }

  // A checkpoint of something else entirely is an error, not a silent fresh start.
  CheckpointContents unrelated;
  unrelated.tensors.push_back(
      TensorEntry{"Other/weights", DType::f32, Shape{1}, std::string(4, '\0')});
  loaded.clear();
  skipped.clear();
  Status none = (*warm)->warm_start(unrelated, "other.safetensors", &loaded, &skipped);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("other.safetensors: no variable of this model"), std::string::npos)
      << none.message();
}

TEST(ModelState, IncompatibleMetadataNamesBothModels) {
  CheckpointMeta saved{"inception_v4", 1001, 299, 299, 1.0, ""};
  CheckpointMeta run{"inception_v3", 1001, 299, 299, 1.0, ""};
  Status s = check_compatible(saved, run, "dir/model.ckpt-5.safetensors");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("holds inception_v4, 1001 classes"), std::string::npos);
  EXPECT_NE(s.message().find("this run is inception_v3, 1001 classes"), std::string::npos);
  run.model = "inception_v4";
  run.height = 150;  // image size alone does not change the tensors' shapes check
  EXPECT_TRUE(check_compatible(saved, run, "p").ok());
  auto parsed = parse_checkpoint_metadata(checkpoint_metadata(saved), "p");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(describe(*parsed), describe(saved));
  EXPECT_FALSE(parse_checkpoint_metadata({{"model", "x"}}, "p").ok());
  // The preprocessing: recorded and read back; absent (older checkpoints) is Inception's;
  // another name is refused, naming the file.
  saved.preprocessing = PreprocessOptions::Kind::vgg;
  std::map<std::string, std::string> metadata = checkpoint_metadata(saved);
  auto vgg = parse_checkpoint_metadata(metadata, "p");
  ASSERT_TRUE(vgg.ok()) << vgg.status().message();
  EXPECT_EQ(vgg->preprocessing, PreprocessOptions::Kind::vgg);
  EXPECT_NE(describe(*vgg).find("vgg preprocessing"), std::string::npos) << describe(*vgg);
  metadata.erase("preprocessing");
  auto older = parse_checkpoint_metadata(metadata, "p");
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->preprocessing, PreprocessOptions::Kind::inception);
  metadata["preprocessing"] = "resnet";
  auto unknown = parse_checkpoint_metadata(metadata, "dir/model.ckpt-5");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("dir/model.ckpt-5"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("'resnet'"), std::string::npos);
}

TEST(ParamInit, VarianceScalingIsContribsTruncatedNormal) {
  ParamInfo conv{"w", Shape{3, 3, 64, 128}, ParamInit{ParamInit::Kind::variance_scaling, 0}};
  EXPECT_EQ(fan_in(conv.shape), 576);
  std::vector<float> values(static_cast<size_t>(conv.shape.numel()));
  init_param(conv, 9, 0, values.data());
  const double stddev = std::sqrt(1.3 * 2.0 / 576);  // before truncation
  double sum = 0, sum_sq = 0, max_abs = 0;
  for (float v : values) {
    sum += v;
    sum_sq += double{v} * v;
    max_abs = std::max(max_abs, std::fabs(double{v}));
  }
  const double n = static_cast<double>(values.size());
  const double sample_std = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
  // A normal truncated at 2 sigma keeps 0.8796 of its stddev, so 1.3 restores sqrt(2/fan_in).
  EXPECT_NEAR(sample_std, std::sqrt(2.0 / 576) * std::sqrt(1.3) * 0.87962566, 0.01 * sample_std);
  EXPECT_LE(max_abs, 2 * stddev + 1e-6);
  EXPECT_NEAR(sum / n, 0, 0.003);
  // Seeded: the same (seed, index) gives the same values, another index others.
  std::vector<float> again(values.size()), other(values.size());
  init_param(conv, 9, 0, again.data());
  init_param(conv, 9, 1, other.data());
  EXPECT_EQ(again, values);
  EXPECT_NE(other, values);
}

}  // namespace
}  // namespace ic
