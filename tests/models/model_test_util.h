// Helpers shared by the model tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "models/model.h"

namespace ic::testing {

// The reference defaults of `name` at batch 2 (shapes below leave the batch out).
inline ModelOptions options_for(const std::string& name) {
  Result<ModelOptions> options = default_model_options(name);
  EXPECT_TRUE(options.ok()) << options.status().message();
  ModelOptions o = options.ok() ? *options : ModelOptions{};
  o.batch_size = 2;
  return o;
}

inline Graph build_or_die(const ModelOptions& options) {
  Result<Graph> graph = build_model(options);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return graph.ok() ? std::move(graph).value() : Graph{};
}

// An end point's shape without the batch dimension; {} when the end point is missing.
inline std::vector<int64_t> endpoint_dims(const Graph& graph, const std::string& name) {
  const ValueId v = graph.endpoint(name);
  if (v == kNone) return {};
  const std::vector<int64_t>& dims = graph.values.at(v).shape.dims();
  return std::vector<int64_t>(dims.begin() + 1, dims.end());
}

inline Shape param_shape(const Graph& graph, const std::string& name) {
  const ParamId p = graph.find_param(name);
  return p == kNone ? Shape{-1} : graph.params.at(p).shape;
}

inline int64_t non_trainable_count(const Graph& graph) {
  int64_t total = 0;
  for (const ParamInfo& p : graph.params)
    if (!p.trainable) total += p.shape.numel();
  return total;
}

}  // namespace ic::testing
