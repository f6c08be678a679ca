// The tiny Inception v3 on the GPU against the CPU: its first gradients, its first two
// training steps (losses, weight changes, moving statistics), and a captured (CUDA graph)
// forward+backward against plain launches. Skipped visibly ("skipped: no GPU") where there is
// no GPU.
//
// How close the GPU must be, and why not closer: this model's gradients jump at ReLU and
// max-pool switch points, so the rounding differences of two implementations (cuDNN and oneDNN
// sum in other orders) grow to percents. Measured on the CPU alone: multiplying each pixel by
// 1 + 1e-6 u (u uniform in [-1, 1]) moves the first gradients by 0.5% over the whole arena (L2;
// 2.9% in the worst variable), the first step's weight changes by 1.0% (5.5%), the moving
// statistics' changes over two steps by 1.0% (8%), and the second loss by 1.4%. Drawing other
// dropout masks, which stands for a wiring bug, moves the same quantities by 69%, 71% and 10%
// (180%, 180%, 89%). An H200 against the CPU: 1.6% (12.6%), 1.9% (14%) and 1.7% (15%). The
// bounds below sit between those and the bug's. A longer loss curve cannot be compared at all:
// by step 3 that 1e-6 change moves the loss by up to 24%. Long training on the GPU is checked by
// its accuracy instead (scripts/gpu/check.sh), and each op by backend_test, to 1e-4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda_test_util.h"
#include "graph/compiled_graph.h"
#include "graph/param_layout.h"
#include "models/model.h"
#include "train/model_state.h"
#include "train/trainer.h"

namespace ic {
namespace {

constexpr uint64_t kDropoutSeed = 11;

// 139 pixels, not the smallest side (75): there the last blocks are 1x1 and batch norm
// normalises 4 values, which makes even the first gradients jump by percents under a 1e-6
// change of the images, where at 139 they move smoothly.
ModelOptions tiny_inception() {
  ModelOptions o = default_model_options("inception_v3").value();
  o.batch_size = 4;
  o.num_classes = 7;
  o.depth_multiplier = 0.1f;
  o.min_depth = 8;
  o.aux_logits = false;
  o.height = o.width = 139;
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

std::vector<float> download(Backend& backend, const float* device, size_t count) {
  std::vector<float> host(count);
  backend.download(host.data(), device, count * sizeof(float));
  return host;
}

// How far the arena `gpu` is from `cpu` (both of `graph`'s layout: the trainable arena, or the
// moving statistics'): over the whole arena (L2), and in the variable that is furthest off
// (max |gpu - cpu| over max |cpu|).
struct Mismatch {
  double arena = 0;
  double worst_variable = 0;
  std::string worst_name;
};

Mismatch mismatch(const Graph& graph, bool trainable, const std::vector<float>& gpu,
                  const std::vector<float>& cpu) {
  Mismatch m;
  const ParamLayout layout = ParamLayout::plan(graph);
  double squared_diff = 0, squared_cpu = 0;
  for (size_t i = 0; i < graph.params.size(); ++i) {
    const ParamInfo& p = graph.params[i];
    if (p.trainable != trainable) continue;
    double diff = 0, scale = 0;
    for (int64_t k = 0; k < p.shape.numel(); ++k) {
      const size_t at = layout.offset[i] + static_cast<size_t>(k);
      const double d = double(gpu[at]) - double(cpu[at]);
      diff = std::max(diff, std::abs(d));
      scale = std::max(scale, std::abs(double(cpu[at])));
      squared_diff += d * d;
      squared_cpu += double(cpu[at]) * double(cpu[at]);
    }
    if (scale > 0 && diff / scale > m.worst_variable) {
      m.worst_variable = diff / scale;
      m.worst_name = p.name;
    }
  }
  m.arena = std::sqrt(squared_diff / std::max(squared_cpu, 1e-30));
  return m;
}

void expect_close(const Graph& graph, bool trainable, const std::vector<float>& gpu,
                  const std::vector<float>& cpu, double arena, double variable, const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  const Mismatch m = mismatch(graph, trainable, gpu, cpu);
  EXPECT_LE(m.arena, arena) << what << ": |gpu - cpu| / |cpu| over the arena";
  EXPECT_LE(m.worst_variable, variable)
      << what << ": max |gpu - cpu| / max |cpu| in " << m.worst_name;
  std::printf("%s: %.3g over the arena, %.3g at worst (%s)\n", what, m.arena, m.worst_variable,
              m.worst_name.c_str());
}

// The tiny Inception's variables on `backend` (initialised with seed 1) and its training graph
// compiled over them, with the fixed batch uploaded.
struct CompiledTiny {
  std::unique_ptr<ModelState> state;
  std::unique_ptr<CompiledGraph> compiled;
};

CompiledTiny compile_tiny(Backend& backend, const Graph& graph) {
  CompiledTiny out;
  auto state = ModelState::create(backend, graph, find_optimizer("RMS"), true, false);
  EXPECT_TRUE(state.ok()) << state.status().message();
  if (!state.ok()) return out;
  EXPECT_TRUE((*state)->initialize(1).ok());
  auto compiled =
      CompiledGraph::compile(graph, backend, (*state)->layout(), (*state)->train_binding());
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (!compiled.ok()) return out;
  const Batch batch = fixed_batch(tiny_inception());
  backend.upload((*compiled)->images(), batch.images.data(), batch.images.size() * sizeof(float));
  backend.upload((*compiled)->labels(), batch.labels.data(), batch.labels.size() * sizeof(int32_t));
  out.state = std::move(state).value();
  out.compiled = std::move(compiled).value();
  return out;
}

// One forward and backward pass: the gradient arena.
std::vector<float> first_gradients(Backend& backend, const Graph& graph) {
  const CompiledTiny tiny = compile_tiny(backend, graph);
  if (!tiny.compiled) return {};
  const StepContext ctx{kDropoutSeed, 0};
  tiny.compiled->forward(ctx);
  tiny.compiled->backward(ctx);
  std::vector<float> grads =
      download(backend, tiny.state->grads(), tiny.state->layout().trainable_count);
  EXPECT_TRUE(backend.status().ok()) << backend.status().message();
  return grads;
}

// The GPU (skipped where there is none), the CPU, and the tiny Inception's training graph.
class CudaTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    IC_CUDA_BACKEND_OR_SKIP(gpu_);
    auto cpu = make_cpu_backend(BackendOptions{});
    ASSERT_TRUE(cpu.ok()) << cpu.status().message();
    cpu_ = std::move(cpu).value();
    auto graph = build_model(tiny_inception());
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    graph_ = std::move(graph).value();
  }
  std::unique_ptr<Backend> gpu_, cpu_;
  Graph graph_;
};

TEST_F(CudaTraining, TinyInceptionFirstGradientsFollowTheCpu) {
  expect_close(graph_, true, first_gradients(*gpu_, graph_), first_gradients(*cpu_, graph_), 0.05,
               0.3, "gradients");
}

// Two RMSProp steps on the fixed batch: their losses, how far the first moved each weight (the
// second's gradients have already jumped: see the top of this file), and how far the two moved
// the moving statistics.
struct TwoSteps {
  std::vector<float> losses, weight_change, statistics_change;
};

TwoSteps two_steps(Backend& backend, const Graph& graph) {
  TwoSteps out;
  auto state = ModelState::create(backend, graph, find_optimizer("RMS"), true, true);
  EXPECT_TRUE(state.ok()) << state.status().message();
  if (!state.ok()) return out;
  EXPECT_TRUE((*state)->initialize(1).ok());
  const ModelOptions o = tiny_inception();
  TrainRecipe recipe;
  recipe.seed = kDropoutSeed;
  recipe.schedule.train_batch_size = o.batch_size;
  auto trainer = Trainer::create(**state, graph, recipe);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  if (!trainer.ok()) return out;
  const size_t count = (*state)->layout().trainable_count;
  const size_t statistics = (*state)->layout().state_count;
  const std::vector<float> weights_before = download(backend, (*state)->weights(), count);
  const std::vector<float> statistics_before = download(backend, (*state)->state(), statistics);
  const Batch batch = fixed_batch(o);
  for (int i = 0; i < 2; ++i) {
    (*trainer)->step(batch.images.data(), batch.labels.data(), true);
    out.losses.push_back((*trainer)->loss());
    if (i > 0) continue;
    out.weight_change = download(backend, (*state)->weights(), count);
    for (size_t k = 0; k < count; ++k) out.weight_change[k] -= weights_before[k];
  }
  out.statistics_change = download(backend, (*state)->state(), statistics);
  for (size_t k = 0; k < statistics; ++k) out.statistics_change[k] -= statistics_before[k];
  EXPECT_TRUE(backend.status().ok()) << backend.status().message();
  return out;
}

TEST_F(CudaTraining, TinyInceptionTwoStepsFollowTheCpu) {
  const TwoSteps on_cpu = two_steps(*cpu_, graph_), on_gpu = two_steps(*gpu_, graph_);
  ASSERT_EQ(on_gpu.losses.size(), 2u);
  ASSERT_EQ(on_cpu.losses.size(), 2u);
  // The first loss is the forward pass alone: that 1e-6 change moves it by 7e-6.
  EXPECT_NEAR(on_gpu.losses[0], on_cpu.losses[0], 1e-3 * std::abs(on_cpu.losses[0]));
  EXPECT_NEAR(on_gpu.losses[1], on_cpu.losses[1], 0.05 * std::abs(on_cpu.losses[1]));
  expect_close(graph_, true, on_gpu.weight_change, on_cpu.weight_change, 0.06, 0.4,
               "the first step's weight changes");
  expect_close(graph_, false, on_gpu.statistics_change, on_cpu.statistics_change, 0.05, 0.4,
               "the moving statistics' changes");
}

TEST_F(CudaTraining, CapturedForwardBackwardMatchesPlainLaunches) {
  Backend* gpu = gpu_.get();
  if (!gpu->supports_capture()) GTEST_SKIP() << "this backend cannot capture steps";
  const CompiledTiny tiny = compile_tiny(*gpu, graph_);
  ASSERT_NE(tiny.compiled, nullptr);
  const size_t count = tiny.state->layout().trainable_count;
  auto grads = [&] { return download(*gpu, tiny.state->grads(), count); };

  const StepContext ctx{kDropoutSeed, 1};
  tiny.compiled->forward(ctx);
  tiny.compiled->backward(ctx);
  const std::vector<float> plain = grads();

  ASSERT_TRUE(gpu->begin_capture().ok());
  tiny.compiled->forward(StepContext{0, 0});
  tiny.compiled->backward(StepContext{0, 0});
  const Status captured = gpu->end_capture();
  ASSERT_TRUE(captured.ok()) << captured.message();
  gpu->fill(tiny.state->grads(), 0.f, count);
  ASSERT_TRUE(gpu->replay(ctx).ok());
  const std::vector<float> replayed = grads();
  ASSERT_TRUE(gpu->status().ok()) << gpu->status().message();
  // Some cuDNN weight-gradient algorithms add with atomics, so allow rounding noise.
  for (size_t i = 0; i < count; ++i)
    ASSERT_NEAR(replayed[i], plain[i], 1e-5 + 1e-4 * std::abs(plain[i])) << "grad " << i;
}

}  // namespace
}  // namespace ic
