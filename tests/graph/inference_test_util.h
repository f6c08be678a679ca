// Helpers of the inference-graph tests: random parameter values with non-trivial moving
// statistics, a graph run on the CPU backend from host values, and a relative comparison.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "graph/compiled_graph.h"
#include "graph/inference_graph.h"

namespace ic::testing {

// Kernels ~ N(0, 2/fan_in) (activations keep their scale through conv + ReLU), biases and
// beta ~ 0.1 N(0,1), gamma and moving variances log-uniform in [0.5, 2] (so the scale drifts
// neither up nor down over a deep network), moving means 0.2 N(0,1).
inline ParamValues random_param_values(const Graph& graph, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> log_half_to_two(std::log(0.5f), std::log(2.f));
  ParamValues values(graph.params.size());
  for (size_t p = 0; p < graph.params.size(); ++p) {
    const ParamInfo& info = graph.params[p];
    const int64_t n = info.shape.numel();
    const bool kernel = info.shape.rank() >= 2;
    const float he = kernel ? std::sqrt(2.f * info.shape[info.shape.rank() - 1] / n) : 0.f;
    const bool log_uniform = info.name.ends_with("moving_variance") || info.name.ends_with("gamma");
    const float spread = info.name.ends_with("moving_mean") ? 0.2f : 0.1f;
    values[p].resize(static_cast<size_t>(n));
    for (float& v : values[p])
      v = kernel        ? he * normal(rng)
          : log_uniform ? std::exp(log_half_to_two(rng))
                        : spread * normal(rng);
  }
  return values;
}

inline ParamSource source_of(const Graph& graph, const ParamValues& values) {
  return [&graph, &values](const std::string& name) {
    const ParamId p = graph.find_param(name);
    if (p == kNone) return ParamBytes{};
    const std::vector<float>& v = values[static_cast<size_t>(p)];
    return ParamBytes{v.data(), v.size() * sizeof(float)};
  };
}

inline std::unique_ptr<Backend> test_cpu_backend() {
  BackendOptions options;
  options.num_threads = 2;
  auto backend = make_cpu_backend(options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

// The logits (then the loss terms) of one forward pass of `graph` with `values`.
inline std::vector<float> run_graph(Backend& backend, const Graph& graph, const ParamValues& values,
                                    const std::vector<float>& images,
                                    const std::vector<int32_t>& labels = {}) {
  InferenceGraph as_is{graph, values, {}};
  auto params = upload_params(backend, as_is);
  EXPECT_TRUE(params.ok()) << params.status().message();
  if (!params.ok()) return {};
  auto compiled = CompiledGraph::compile(graph, backend, params->layout, params->binding());
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (!compiled.ok()) return {};
  CompiledGraph& cg = **compiled;
  backend.upload(cg.images(), images.data(), images.size() * sizeof(float));
  if (!labels.empty()) backend.upload(cg.labels(), labels.data(), labels.size() * 4);
  cg.forward({});
  const auto count =
      static_cast<size_t>(graph.values[static_cast<size_t>(graph.logits)].shape.numel());
  std::vector<float> out(count);
  backend.download(out.data(), cg.logits(), count * sizeof(float));
  for (const float* term : cg.loss_terms()) {
    float loss = 0;
    backend.download(&loss, term, sizeof loss);
    out.push_back(loss);
  }
  return out;
}

inline std::vector<float> random_images(const Graph& graph, uint32_t seed) {
  const Shape& shape = graph.values[static_cast<size_t>(graph.images)].shape;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(static_cast<size_t>(shape.numel()));
  for (float& v : images) v = pixel(rng);
  return images;
}

// |a - b| <= rel * max|b| elementwise: a relative error on the logits' scale (single logits
// near zero would make an elementwise relative error meaningless). Returns the worst ratio
// |a - b| / max|b|.
inline double expect_relative(const std::vector<float>& actual, const std::vector<float>& expected,
                              double rel, const char* what) {
  EXPECT_EQ(actual.size(), expected.size()) << what;
  double scale = 0;
  for (float v : expected) scale = std::max(scale, std::abs(double{v}));
  EXPECT_GT(scale, 0.0) << what << ": all zero";
  double worst = 0;
  int reported = 0;
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    const double err = std::abs(double{actual[i]} - double{expected[i]}) / scale;
    worst = std::max(worst, err);
    if (!(err <= rel) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << " vs " << expected[i] << " (scale "
                    << scale << ")";
  }
  return worst;
}

inline int count_ops(const Graph& g, const std::string& name) {
  int n = 0;
  for (const Node& node : g.nodes) n += name == op_name(node.desc);
  return n;
}

}  // namespace ic::testing
