// The executor on the oneDNN CPU backend: parameter gradients from backward() against
// central finite differences of the loss from forward(), and inference against training.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>

#include "graph/compiled_graph.h"
#include "test_graphs.h"

namespace ic {
namespace {

struct CpuGraph {
  std::unique_ptr<Backend> backend;
  ParamLayout layout;
  DeviceBuffer weights, state, grads;
  std::unique_ptr<CompiledGraph> compiled;
};

std::unique_ptr<Backend> cpu_backend() {
  auto backend = make_cpu_backend(BackendOptions{});
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

float* f32(const DeviceBuffer& b) { return b.as<float>(); }

// Random weights (scaled so activations stay O(1)), zero-mean unit-variance moving stats,
// random images and labels 0..classes-1 with the last row as padding when `padding`.
void fill_inputs(CpuGraph& s, const Graph& graph, CompiledGraph& cg, uint32_t seed, bool padding) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  float* w = f32(s.weights);
  for (size_t p = 0; p < graph.params.size(); ++p) {
    const ParamInfo& info = graph.params[p];
    float* base = (info.trainable ? w : f32(s.state)) + s.layout.offset[p];
    const int64_t n = info.shape.numel();
    const bool variance = info.name.ends_with("moving_variance");
    const bool mean = info.name.ends_with("moving_mean");
    const float scale =
        info.shape.rank() >= 2
            ? 1.f / std::sqrt(static_cast<float>(n / info.shape[info.shape.rank() - 1]))
            : 0.3f;
    for (int64_t e = 0; e < n; ++e)
      base[e] = variance ? 1.f + 0.5f * std::abs(normal(rng))
                : mean   ? 0.2f * normal(rng)
                         : scale * normal(rng);
  }
  const Shape& image_shape = graph.values[static_cast<size_t>(graph.images)].shape;
  for (int64_t e = 0; e < image_shape.numel(); ++e) cg.images()[e] = normal(rng);
  const int64_t batch = image_shape.n();
  const int64_t classes = graph.values[static_cast<size_t>(graph.logits)].shape[1];
  for (int64_t i = 0; i < batch; ++i) cg.labels()[i] = static_cast<int32_t>((i * 3 + 1) % classes);
  if (padding) cg.labels()[batch - 1] = -1;
}

CpuGraph compile(const Graph& graph, bool with_grads) {
  CpuGraph s;
  s.backend = cpu_backend();
  if (!s.backend) return s;
  s.layout = ParamLayout::plan(graph);
  s.weights = std::move(s.backend->allocate(s.layout.trainable_count * 4)).value();
  s.state = std::move(s.backend->allocate(s.layout.state_count * 4)).value();
  s.grads = std::move(s.backend->allocate(s.layout.trainable_count * 4)).value();
  ParamBinding binding{f32(s.weights), f32(s.state), with_grads ? f32(s.grads) : nullptr};
  auto compiled = CompiledGraph::compile(graph, *s.backend, s.layout, binding);
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (compiled.ok()) s.compiled = std::move(compiled).value();
  return s;
}

double total_loss(CompiledGraph& cg, const StepContext& ctx) {
  cg.forward(ctx);
  double sum = 0;
  for (const float* term : cg.loss_terms()) sum += *term;
  return sum;
}

TEST(ExecutorCpu, ParameterGradientsMatchFiniteDifferences) {
  for (bool padding : {false, true}) {
    const Graph graph = testing::small_graph({.batch = 3, .size = 5, .classes = 4});
    CpuGraph s = compile(graph, true);
    ASSERT_NE(s.compiled, nullptr);
    CompiledGraph& cg = *s.compiled;
    fill_inputs(s, graph, cg, 42, padding);
    const StepContext ctx{7, 0};
    cg.forward(ctx);
    cg.backward(ctx);
    const std::vector<float> grads(f32(s.grads), f32(s.grads) + s.layout.trainable_count);

    // Central differences in float32: eps large enough that rounding noise (~1e-7 * loss /
    // eps) stays well below the tolerance, small enough that ReLU / max-pool kinks and
    // curvature barely move the estimate (at 5e-3 they cost ~5%, at 5e-4 under 0.3%).
    const float eps = 5e-4f;
    float* w = f32(s.weights);
    double worst = 0;
    int checked = 0, bad = 0;
    for (size_t p = 0; p < graph.params.size(); ++p) {
      const ParamInfo& info = graph.params[p];
      if (!info.trainable) continue;
      // Up to 8 elements per parameter, spread over it, keep the test fast under sanitizers.
      const int64_t stride = std::max<int64_t>(1, info.shape.numel() / 8);
      for (int64_t e = 0; e < info.shape.numel(); e += stride) {
        const size_t at = s.layout.offset[p] + static_cast<size_t>(e);
        const float saved = w[at];
        w[at] = saved + eps;
        const double up = total_loss(cg, ctx);
        w[at] = saved - eps;
        const double down = total_loss(cg, ctx);
        w[at] = saved;
        const double numeric = (up - down) / (2.0 * eps);
        const double err = std::abs(numeric - grads[at]);
        const double tol = 2e-3 + 2e-2 * std::max(std::abs(numeric), std::abs(double{grads[at]}));
        worst = std::max(worst, err / tol);
        ++checked;
        if (err > tol && ++bad <= 10)
          ADD_FAILURE() << info.name << "[" << e << "]: backward " << grads[at]
                        << ", finite difference " << numeric;
      }
    }
    EXPECT_GT(checked, 50);
    std::printf("padding=%d: %d gradients checked, worst error/tolerance %.3f\n", padding, checked,
                worst);
  }
}

TEST(ExecutorCpu, BackwardIsRepeatableAndOverwritesGradients) {
  const Graph graph = testing::small_graph({.batch = 2, .size = 5, .classes = 3});
  CpuGraph s = compile(graph, true);
  ASSERT_NE(s.compiled, nullptr);
  fill_inputs(s, graph, *s.compiled, 3, false);
  s.compiled->forward({1, 0});
  s.compiled->backward({1, 0});
  const std::vector<float> first(f32(s.grads), f32(s.grads) + s.layout.trainable_count);
  s.backend->fill(f32(s.grads), 1e6f,
                  s.layout.trainable_count);  // must be overwritten, not added to
  s.compiled->forward({1, 0});
  s.compiled->backward({1, 0});
  for (size_t i = 0; i < first.size(); ++i) ASSERT_FLOAT_EQ(f32(s.grads)[i], first[i]) << i;
}

TEST(ExecutorCpu, InferenceMatchesTrainingWhenMovingStatisticsEqualBatchStatistics) {
  // decay 0: one training forward sets the moving statistics to the batch statistics
  // (variance unbiased by n/(n-1)); undoing that factor makes inference normalise with
  // exactly the statistics training used.
  testing::SmallGraphOptions options{
      .batch = 3, .size = 5, .classes = 4, .with_dropout = false, .bn_decay = 0.f};
  const Graph train_graph = testing::small_graph(options);
  options.training = false;
  const Graph eval_graph = testing::small_graph(options);
  CpuGraph train = compile(train_graph, true);
  CpuGraph eval = compile(eval_graph, false);
  ASSERT_NE(train.compiled, nullptr);
  ASSERT_NE(eval.compiled, nullptr);
  fill_inputs(train, train_graph, *train.compiled, 9, false);
  fill_inputs(eval, eval_graph, *eval.compiled, 9, false);
  train.compiled->forward({});

  const double n = 3 * 5 * 5;  // every BN here normalises over N*H*W = 75 values per channel
  const float* moving = f32(train.state);
  for (size_t p = 0; p < train_graph.params.size(); ++p) {
    const ParamInfo& info = train_graph.params[p];
    if (info.trainable) continue;
    const double factor = info.name.ends_with("moving_variance") ? (n - 1) / n : 1.0;
    for (int64_t e = 0; e < info.shape.numel(); ++e)
      f32(eval.state)[eval.layout.offset[p] + static_cast<size_t>(e)] =
          static_cast<float>(moving[train.layout.offset[p] + static_cast<size_t>(e)] * factor);
  }
  eval.compiled->forward({});
  const int64_t count = train_graph.values[static_cast<size_t>(train_graph.logits)].shape.numel();
  for (int64_t i = 0; i < count; ++i)
    EXPECT_NEAR(eval.compiled->logits()[i], train.compiled->logits()[i], 2e-4) << i;
  const auto train_losses = train.compiled->loss_terms(), eval_losses = eval.compiled->loss_terms();
  ASSERT_EQ(train_losses.size(), eval_losses.size());
  for (size_t k = 0; k < train_losses.size(); ++k)
    EXPECT_NEAR(*eval_losses[k], *train_losses[k], 2e-4);
}

// IC_PROFILE=layers: the table printed when the graph goes has one line per node, forward and
// backward calls counted, with the op kind and the implementation the backend chose; =1 one
// line per op kind.
std::string profile_table(const char* setting) {
  ::setenv("IC_PROFILE", setting, 1);
  const Graph graph = testing::small_graph({.batch = 2, .size = 5, .classes = 3});
  ::testing::internal::CaptureStderr();
  {
    CpuGraph s = compile(graph, true);
    ::unsetenv("IC_PROFILE");
    if (s.compiled == nullptr) return ::testing::internal::GetCapturedStderr();
    fill_inputs(s, graph, *s.compiled, 3, false);
    for (int step = 0; step < 2; ++step) {
      s.compiled->forward({1, 0});
      s.compiled->backward({1, 0});
    }
  }
  return ::testing::internal::GetCapturedStderr();
}

TEST(ExecutorCpu, ProfilesByLayerOrByOpKind) {
  const std::string layers = profile_table("layers");
  ASSERT_NE(layers.find("node "), std::string::npos) << layers;
  // The first convolution: two forward and two backward calls, and oneDNN's implementation.
  const size_t conv = layers.find("\nNet/Conv2d_1a_3x3 ");
  ASSERT_NE(conv, std::string::npos) << layers;
  const std::string line = layers.substr(conv + 1, layers.find('\n', conv + 1) - conv - 1);
  std::istringstream fields(line.substr(line.find(' ')));
  double forward_s = -1, backward_s = -1;
  long forward_calls = 0, backward_calls = 0;
  fields >> forward_s >> forward_calls >> backward_s >> backward_calls;
  EXPECT_GE(forward_s, 0);
  EXPECT_EQ(forward_calls, 2) << line;
  EXPECT_EQ(backward_calls, 2) << line;
  EXPECT_NE(line.find("conv2d: "), std::string::npos) << line;
  EXPECT_NE(layers.find("\nNet/Mixed "), std::string::npos) << layers;
  EXPECT_NE(layers.find("total "), std::string::npos) << layers;

  const std::string kinds = profile_table("1");
  EXPECT_NE(kinds.find("\nconv2d "), std::string::npos) << kinds;
  EXPECT_EQ(kinds.find("Net/Conv2d_1a_3x3"), std::string::npos) << kinds;
  EXPECT_EQ(profile_table("0").find("total "), std::string::npos);
}

}  // namespace
}  // namespace ic
