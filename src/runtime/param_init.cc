#include "runtime/param_init.h"

#include <cmath>
#include <random>

#include "core/mix64.h"

namespace ic {
namespace {

void truncated_normal(std::mt19937_64& rng, float stddev, float* out, int64_t count) {
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t i = 0; i < count; ++i) {
    double z;
    do {
      z = normal(rng);
    } while (std::fabs(z) > 2.0);
    out[i] = static_cast<float>(z * stddev);
  }
}

}  // namespace

int64_t fan_in(const Shape& shape) {
  if (shape.rank() < 2) return 1;
  int64_t n = 1;
  for (int axis = 0; axis < shape.rank() - 1; ++axis) n *= shape[axis];
  return n;
}

int64_t fan_out(const Shape& shape) {
  if (shape.rank() < 2) return 1;
  int64_t receptive = 1;
  for (int axis = 0; axis < shape.rank() - 2; ++axis) receptive *= shape[axis];
  return receptive * shape[shape.rank() - 1];
}

void init_param(const ParamInfo& info, uint64_t seed, uint64_t param_index, float* out) {
  const int64_t count = info.shape.numel();
  std::mt19937_64 rng(mix64(mix64(seed) ^ param_index));
  switch (info.init.kind) {
    case ParamInit::Kind::zeros:
      for (int64_t i = 0; i < count; ++i) out[i] = 0.f;
      return;
    case ParamInit::Kind::ones:
      for (int64_t i = 0; i < count; ++i) out[i] = 1.f;
      return;
    case ParamInit::Kind::variance_scaling: {
      const double stddev = std::sqrt(1.3 * 2.0 / static_cast<double>(fan_in(info.shape)));
      truncated_normal(rng, static_cast<float>(stddev), out, count);
      return;
    }
    case ParamInit::Kind::truncated_normal:
      truncated_normal(rng, info.init.stddev, out, count);
      return;
    case ParamInit::Kind::glorot_uniform: {
      const double limit =
          std::sqrt(6.0 / static_cast<double>(fan_in(info.shape) + fan_out(info.shape)));
      std::uniform_real_distribution<double> uniform(-limit, limit);
      for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(uniform(rng));
      return;
    }
  }
}

}  // namespace ic
