// A tiny Inception v3 trained 20 steps on the GPU follows the CPU's loss curve, and a
// captured (CUDA graph) forward+backward gives the gradients plain launches give. Skipped
// visibly ("skipped: no GPU") where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda_test_util.h"
#include "graph/compiled_graph.h"
#include "models/model.h"
#include "train/model_state.h"
#include "train/trainer.h"

namespace ic {
namespace {

ModelOptions tiny_inception() {
  ModelOptions o = default_model_options("inception_v3").value();
  o.batch_size = 4;
  o.num_classes = 7;
  o.depth_multiplier = 0.1f;
  o.min_depth = 8;
  o.aux_logits = false;
  const ImageSideRange sides = supported_image_sides(o).value();
  o.height = o.width = sides.min;
  return o;
}

struct Batch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

Batch fixed_batch(const ModelOptions& o) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  Batch b;
  b.images.resize(static_cast<size_t>(o.batch_size * o.height * o.width * 3));
  for (float& v : b.images) v = pixel(gen);
  for (int64_t i = 0; i < o.batch_size; ++i)
    b.labels.push_back(static_cast<int32_t>(1 + i % (o.num_classes - 1)));
  return b;
}

std::vector<float> loss_curve(Backend& backend, const ModelOptions& o, int steps) {
  auto graph = build_model(o);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  auto state = ModelState::create(backend, *graph, find_optimizer("RMS"), true, true);
  EXPECT_TRUE(state.ok()) << state.status().message();
  EXPECT_TRUE((*state)->initialize(1).ok());
  TrainRecipe recipe;
  recipe.seed = 5;
  recipe.schedule.train_batch_size = o.batch_size;
  auto trainer = Trainer::create(**state, *graph, recipe);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  const Batch batch = fixed_batch(o);
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    (*trainer)->step(batch.images.data(), batch.labels.data(), true);
    losses.push_back((*trainer)->loss());
  }
  const Status status = backend.status();
  EXPECT_TRUE(status.ok()) << status.message();
  return losses;
}

TEST(CudaTraining, TinyInceptionFollowsTheCpuLossCurve) {
  std::unique_ptr<Backend> gpu;
  IC_CUDA_BACKEND_OR_SKIP(gpu);
  auto cpu = make_cpu_backend(BackendOptions{});
  ASSERT_TRUE(cpu.ok());
  const ModelOptions o = tiny_inception();
  const std::vector<float> on_cpu = loss_curve(**cpu, o, 20);
  const std::vector<float> on_gpu = loss_curve(*gpu, o, 20);
  ASSERT_EQ(on_cpu.size(), on_gpu.size());
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    ASSERT_TRUE(std::isfinite(on_gpu[i])) << "step " << i;
    // Summation orders differ (cuDNN vs oneDNN), and 20 steps amplify that a little.
    EXPECT_NEAR(on_gpu[i], on_cpu[i], 1e-3 + 0.02 * std::abs(on_cpu[i])) << "step " << i;
  }
}

TEST(CudaTraining, CapturedForwardBackwardMatchesPlainLaunches) {
  std::unique_ptr<Backend> gpu;
  IC_CUDA_BACKEND_OR_SKIP(gpu);
  if (!gpu->supports_capture()) GTEST_SKIP() << "this backend cannot capture steps";
  ModelOptions o = tiny_inception();
  auto graph = build_model(o);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto state = ModelState::create(*gpu, *graph, find_optimizer("RMS"), true, false);
  ASSERT_TRUE(state.ok()) << state.status().message();
  ASSERT_TRUE((*state)->initialize(1).ok());
  auto compiled =
      CompiledGraph::compile(*graph, *gpu, (*state)->layout(), (*state)->train_binding());
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  const Batch batch = fixed_batch(o);
  gpu->upload((*compiled)->images(), batch.images.data(), batch.images.size() * sizeof(float));
  gpu->upload((*compiled)->labels(), batch.labels.data(), batch.labels.size() * sizeof(int32_t));
  const size_t count = (*state)->layout().trainable_count;
  auto grads = [&] {
    std::vector<float> host(count);
    gpu->download(host.data(), (*state)->grads(), count * sizeof(float));
    return host;
  };

  const StepContext ctx{11, 1};
  (*compiled)->forward(ctx);
  (*compiled)->backward(ctx);
  const std::vector<float> plain = grads();

  ASSERT_TRUE(gpu->begin_capture().ok());
  (*compiled)->forward(StepContext{0, 0});
  (*compiled)->backward(StepContext{0, 0});
  const Status captured = gpu->end_capture();
  ASSERT_TRUE(captured.ok()) << captured.message();
  gpu->fill((*state)->grads(), 0.f, count);
  ASSERT_TRUE(gpu->replay(ctx).ok());
  const std::vector<float> replayed = grads();
  ASSERT_TRUE(gpu->status().ok()) << gpu->status().message();
  // Some cuDNN weight-gradient algorithms add with atomics, so allow rounding noise.
  for (size_t i = 0; i < count; ++i)
    ASSERT_NEAR(replayed[i], plain[i], 1e-5 + 1e-4 * std::abs(plain[i])) << "grad " << i;
}

}  // namespace
}  // namespace ic
