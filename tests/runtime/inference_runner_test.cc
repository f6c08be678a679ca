// InferenceRunner (the folded inference graph, one upload shared by every batch size) against
// the unfolded model graph evaluated by the Evaluator on the same values: the same logits
// within 1e-5 of their scale, at every compiled batch size, each image independent of the
// others in its batch.
#include "runtime/inference_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/checkpoint_dir.h"
#include "runtime/evaluator.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

// A step-1 checkpoint of a tiny `model` with random weights, moving means and positive moving
// variances (so folding batch norm does real work), loaded back for inference.
InferenceModel tiny_model(const std::string& model, const std::string& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const CheckpointMeta meta{model, 7, 75, 75, 0.25, ""};
  const Graph graph = build_model(inference_model_options(meta, 1).value()).value();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 0.1f);
  std::uniform_real_distribution<float> positive(0.5f, 1.5f);
  std::vector<std::vector<float>> storage;
  std::vector<TensorView> views;
  storage.reserve(graph.params.size());
  for (const ParamInfo& p : graph.params) {
    storage.emplace_back(p.shape.numel());
    const bool variance = p.name.ends_with("moving_variance") || p.name.ends_with("gamma");
    for (float& v : storage.back()) v = variance ? positive(rng) : normal(rng);
    views.push_back({p.name, DType::f32, p.shape, storage.back().data()});
  }
  static const int64_t step = 1;
  views.push_back({"global_step", DType::i64, Shape{}, &step});
  EXPECT_TRUE(save_checkpoint(dir, 1, checkpoint_metadata(meta), views).ok());
  return load_for_inference(dir, "").value();
}

class InferenceRunnerModels : public ::testing::TestWithParam<std::string> {};

TEST_P(InferenceRunnerModels, FoldedGraphEqualsTheEvaluatedModelGraph) {
  const std::string dir =
      (fs::temp_directory_path() / ("ic_runner_" + std::to_string(getpid()) + GetParam())).string();
  const InferenceModel model = tiny_model(GetParam(), dir);
  std::unique_ptr<Backend> backend = make_backend({}).value();
  const std::vector<int64_t> sizes = {1, 3};
  Result<std::unique_ptr<InferenceRunner>> runner = InferenceRunner::create(*backend, model, sizes);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  EXPECT_EQ((*runner)->batch_sizes(), sizes);

  const int64_t floats = (*runner)->image_floats(), classes = (*runner)->num_classes();
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(static_cast<size_t>(3 * floats));
  for (float& v : images) v = pixel(rng);

  for (int64_t n : sizes) {
    const Graph graph = build_inference_graph(model, n).value();
    std::unique_ptr<ModelVariables> variables =
        upload_for_inference(*backend, model, graph).value();
    std::unique_ptr<Evaluator> evaluator = Evaluator::create(*variables, graph, 0.f).value();
    evaluator->run_batch(images.data(), nullptr);
    const std::vector<float>& want = evaluator->logits();

    std::vector<float> got(static_cast<size_t>(n * classes));
    (*runner)->run(n, images.data(), got.data());
    float scale = 0, worst = 0;
    for (float v : want) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    EXPECT_LE(worst, 1e-5f * std::max(scale, 1.f)) << "batch " << n << ", logit scale " << scale;
    // The first image's logits do not depend on what else is in the batch.
    std::vector<float> alone(static_cast<size_t>(classes));
    (*runner)->run(1, images.data(), alone.data());
    for (int64_t c = 0; c < classes; ++c)
      EXPECT_NEAR(alone[c], got[c], 1e-5f * std::max(scale, 1.f));
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(All, InferenceRunnerModels,
                         ::testing::Values("inception_v3", "inception_v4", "resnet50"));

// A batch run as slices is the smaller graph run on each slice: each image's logits are the
// size-1 graph's bit for bit, and the whole batch's to a float's rounding.
TEST(InferenceRunner, ABatchRunAsSlicesGivesTheSmallerGraphsLogits) {
  const std::string dir =
      (fs::temp_directory_path() / ("ic_runner_slices_" + std::to_string(getpid()))).string();
  const InferenceModel model = tiny_model("inception_v3", dir);
  std::unique_ptr<Backend> backend = make_backend({}).value();
  InferenceGraphOptions fixed;
  fixed.time_algorithms = false;  // no timing: every batch runs whole until told otherwise
  std::unique_ptr<InferenceRunner> runner =
      InferenceRunner::create(*backend, model, {1, 2, 4}, fixed).value();
  for (int64_t n : {1, 2, 4}) EXPECT_EQ(runner->slice_of(n), n);
  EXPECT_EQ(runner->slices_summary(), "");

  const int64_t floats = runner->image_floats(), classes = runner->num_classes();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(static_cast<size_t>(4 * floats));
  for (float& v : images) v = pixel(rng);
  std::vector<float> whole(static_cast<size_t>(4 * classes));
  runner->run(4, images.data(), whole.data());

  ASSERT_TRUE(runner->run_as_slices(4, 1).ok());
  EXPECT_EQ(runner->slice_of(4), 1);
  EXPECT_EQ(runner->slices_summary(), "4 as 4 x 1");
  std::vector<float> sliced(whole.size());
  runner->run(4, images.data(), sliced.data());
  float scale = 0;
  for (float v : whole) scale = std::max(scale, std::fabs(v));
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<float> alone(static_cast<size_t>(classes));
    runner->run(1, images.data() + i * floats, alone.data());
    for (int64_t c = 0; c < classes; ++c) {
      EXPECT_EQ(sliced[i * classes + c], alone[c]) << "image " << i << " class " << c;
      EXPECT_NEAR(sliced[i * classes + c], whole[i * classes + c], 1e-5f * std::max(scale, 1.f));
    }
  }
  // Slices of 2: the size-2 graph's logits, pair by pair.
  ASSERT_TRUE(runner->run_as_slices(4, 2).ok());
  EXPECT_EQ(runner->slices_summary(), "4 as 2 x 2");
  runner->run(4, images.data(), sliced.data());
  std::vector<float> pair(static_cast<size_t>(2 * classes));
  runner->run(2, images.data() + 2 * floats, pair.data());
  for (int64_t k = 0; k < 2 * classes; ++k) EXPECT_EQ(sliced[2 * classes + k], pair[k]) << k;

  // Only compiled sizes that divide the batch.
  EXPECT_EQ(runner->run_as_slices(4, 3).code(), StatusCode::invalid_argument);
  EXPECT_EQ(runner->run_as_slices(2, 4).code(), StatusCode::invalid_argument);
  EXPECT_EQ(runner->run_as_slices(8, 2).code(), StatusCode::invalid_argument);
  EXPECT_EQ(runner->slice_of(4), 2);  // a refused plan changes nothing
  fs::remove_all(dir);
}

// Timed (the default), each size runs whole or as slices of a smaller compiled size dividing
// it, and the logits are the same to a float's rounding either way.
TEST(InferenceRunner, TimedSlicesAreCompiledSizesThatDivideTheBatch) {
  const std::string dir =
      (fs::temp_directory_path() / ("ic_runner_timed_" + std::to_string(getpid()))).string();
  const InferenceModel model = tiny_model("inception_v3", dir);
  std::unique_ptr<Backend> backend = make_backend({}).value();
  std::unique_ptr<InferenceRunner> runner =
      InferenceRunner::create(*backend, model, {1, 2, 4, 6}).value();
  const std::vector<int64_t> sizes = runner->batch_sizes();
  for (int64_t n : sizes) {
    const int64_t slice = runner->slice_of(n);
    EXPECT_TRUE(std::find(sizes.begin(), sizes.end(), slice) != sizes.end()) << n;
    EXPECT_EQ(n % slice, 0) << n << " as slices of " << slice;
  }
  EXPECT_EQ(runner->slice_of(1), 1);
  EXPECT_NE(runner->slice_of(6), 4);
  fs::remove_all(dir);
}

TEST(InferenceRunner, NoBatchSizeOrABadOneIsAnError) {
  const std::string dir =
      (fs::temp_directory_path() / ("ic_runner_bad_" + std::to_string(getpid()))).string();
  const InferenceModel model = tiny_model("inception_v3", dir);
  std::unique_ptr<Backend> backend = make_backend({}).value();
  EXPECT_EQ(InferenceRunner::create(*backend, model, {}).status().code(),
            StatusCode::invalid_argument);
  EXPECT_EQ(InferenceRunner::create(*backend, model, {0, 2}).status().code(),
            StatusCode::invalid_argument);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ic
