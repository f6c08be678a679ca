// Initial parameter values, as TF-slim's initialisers draw them (same distributions, not
// the same random numbers: TensorFlow's Philox stream is not reproduced).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"

namespace ic {

// Fan-in of a kernel: HWIO [kh,kw,in,out] -> kh*kw*in; dense [in,out] -> in; as
// tf.contrib.layers.variance_scaling_initializer computes it (all dims but the last).
int64_t fan_in(const Shape& shape);
int64_t fan_out(const Shape& shape);

// Fills `out` (shape.numel() floats) for one parameter. Draws are a function of
// (seed, param_index) only, so adding a parameter does not change the others.
//   zeros / ones             constants
//   variance_scaling         contrib's default (factor 2, FAN_IN, normal): truncated normal
//                            with stddev sqrt(1.3 * 2 / fan_in) (1.3 undoes the truncation)
//   truncated_normal         N(0, stddev) redrawn beyond 2 stddev (tf.truncated_normal)
//   glorot_uniform           U(-l, l), l = sqrt(6 / (fan_in + fan_out))
void init_param(const ParamInfo& info, uint64_t seed, uint64_t param_index, float* out);

}  // namespace ic
