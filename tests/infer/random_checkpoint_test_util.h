// A checkpoint of a small model with random values, for the tests that export it or load it
// back, and the logits a loaded model gives for two images.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/checkpoint_dir.h"
#include "models/model.h"
#include "runtime/inference_model.h"
#include "runtime/inference_runner.h"

namespace ic::testing {

struct RandomCheckpoint {
  std::string model = "inception_v3";
  int image_size = 75;
  double depth_multiplier = 0.25;
  int64_t step = 4;
  uint32_t seed = 13;
};

// Writes `spec`'s model at 7 classes with values ~ 0.1 N(0,1), gammas and moving variances in
// [0.5, 1.5]. Every trainable tensor and moving mean also gets an EMA shadow drawn apart from
// it, so a reader that takes the raw tensor where the shadow is due gives other logits.
inline void write_random_checkpoint(const std::string& dir, const RandomCheckpoint& spec = {}) {
  const CheckpointMeta meta{spec.model, 7, spec.image_size, spec.image_size, spec.depth_multiplier,
                            ""};
  const Graph graph = build_model(inference_model_options(meta, 1).value()).value();
  std::mt19937 rng(spec.seed);
  std::normal_distribution<float> normal(0.f, 0.1f);
  std::uniform_real_distribution<float> positive(0.5f, 1.5f);
  std::vector<std::vector<float>> storage;
  std::vector<TensorView> views;
  storage.reserve(2 * graph.params.size());
  for (const ParamInfo& p : graph.params) {
    const bool variance = p.name.ends_with("moving_variance") || p.name.ends_with("gamma");
    for (const char* suffix : {"", "/ExponentialMovingAverage"}) {
      if (*suffix && !(p.trainable || p.name.ends_with("moving_mean"))) continue;
      storage.emplace_back(p.shape.numel());
      for (float& v : storage.back()) v = variance ? positive(rng) : normal(rng);
      views.push_back({p.name + suffix, DType::f32, p.shape, storage.back().data()});
    }
  }
  const int64_t step = spec.step;
  views.push_back({"global_step", DType::i64, Shape{}, &step});
  ASSERT_TRUE(save_checkpoint(dir, spec.step, checkpoint_metadata(meta), views).ok());
}

// The logits of `model` for two images (`images` holds both), on the default CPU backend.
inline std::vector<float> logits_of_two(const InferenceModel& model,
                                        const std::vector<float>& images) {
  std::unique_ptr<Backend> backend = make_backend({}).value();
  Result<std::unique_ptr<InferenceRunner>> runner = InferenceRunner::create(*backend, model, {2});
  EXPECT_TRUE(runner.ok()) << runner.status().message();
  if (!runner.ok()) return {};
  std::vector<float> logits(2 * (*runner)->num_classes());
  (*runner)->run(2, images.data(), logits.data());
  return logits;
}

}  // namespace ic::testing
