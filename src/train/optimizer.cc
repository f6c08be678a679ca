#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

#include "backend/backend.h"

namespace ic {
namespace {

using Hyper = std::span<const Hyperparameter>;

// sgd: TF's GradientDescentOptimizer. p -= lr*g
void sgd_update(Backend& b, const OptimizerStep& s, Hyper) {
  b.scale_add(s.weights, 1.f, -s.learning_rate, s.grads, s.count);
}

// momentum: TF's MomentumOptimizer. accum = m*accum + g; p -= lr*accum; with use_nesterov
// p -= lr*g + lr*m*accum instead.
void momentum_update(Backend& b, const OptimizerStep& s, Hyper h) {
  const float momentum = static_cast<float>(h[0].value), lr = s.learning_rate;
  float* accum = s.slots[0];
  b.scale_add(accum, momentum, 1.f, s.grads, s.count);
  b.scale_add(s.weights, 1.f, -lr, accum, s.count);
  if (s.nesterov) {
    // The plain update took lr*accum, so add back lr*(1-m)*accum and take lr*g.
    b.axpy(-lr, s.grads, s.weights, s.count);
    b.axpy(lr * (1.f - momentum), accum, s.weights, s.count);
  }
}

// RMS: TF1's RMSPropOptimizer (ApplyRMSProp). ms = decay*ms + (1-decay)*g²;
// mom = momentum*mom + lr*g/sqrt(ms + epsilon); p -= mom
void rmsprop_update(Backend& b, const OptimizerStep& s, Hyper h) {
  const float decay = static_cast<float>(h[0].value);
  const float momentum = static_cast<float>(h[1].value);
  const float epsilon = static_cast<float>(h[2].value);
  float* ms = s.slots[0];
  float* mom = s.slots[1];
  b.scale_add_square(ms, decay, 1.f - decay, s.grads, s.count);
  b.scale_add_over_root(mom, momentum, s.learning_rate, s.grads, ms, {epsilon, 1.f, 0.f}, s.count);
  b.scale_add(s.weights, 1.f, -1.f, mom, s.count);
}

// adamw: torch.optim.AdamW (Loshchilov & Hutter's decoupled weight decay), over the decayed
// kernels only (biases and batch norm are not decayed, as with every optimizer here).
// p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g²;
// p -= lr/(1 - b1^t) * m / (sqrt(v)/sqrt(1 - b2^t) + epsilon)
void adamw_update(Backend& b, const OptimizerStep& s, Hyper h) {
  const double beta1 = h[0].value, beta2 = h[1].value, epsilon = h[2].value;
  float* m = s.slots[0];
  float* v = s.slots[1];
  b.scale_add(m, static_cast<float>(beta1), static_cast<float>(1 - beta1), s.grads, s.count);
  b.scale_add_square(v, static_cast<float>(beta2), static_cast<float>(1 - beta2), s.grads, s.count);
  // The bias corrections in double, as torch takes them (Python floats).
  const double t = static_cast<double>(s.step), lr = s.learning_rate;
  const float step_size = static_cast<float>(-lr / (1 - std::pow(beta1, t)));
  const RootDenominator root{0.f, static_cast<float>(std::sqrt(1 - std::pow(beta2, t))),
                             static_cast<float>(epsilon)};
  const float shrink = static_cast<float>(1 - lr * s.weight_decay);
  b.scale_add_over_root(s.weights, shrink, step_size, m, v, root, s.decayed);
  const size_t d = s.decayed;
  b.scale_add_over_root(s.weights + d, 1.f, step_size, m + d, v + d, root, s.count - d);
}

// lars: You, Gitman & Ginsburg 2017, as TF's LARSOptimizer in the TPU ResNet-50 recipe, whose
// skip list (batch_normalization, bias) is the variables outside the decayed kernels. For each
// decayed variable: trust = eeta*|w| / (|g| + wd*|w| + epsilon) (1 when |w| or |g| is 0),
// accum = m*accum + lr*trust*(g + wd*w); for the others accum = m*accum + lr*g; then
// p -= accum. (The recipe's LARS is not Nesterov's: `nesterov` is not read.)
void lars_update(Backend& b, const OptimizerStep& s, Hyper h) {
  const float momentum = static_cast<float>(h[0].value);
  const double eeta = h[1].value, epsilon = h[2].value, wd = s.weight_decay;
  float* accum = s.slots[0];
  std::vector<FlatRange> decayed;  // the decayed variables, relative to the step's pointers
  for (size_t i = 0, offset = 0; i < s.variables.size() && offset < s.decayed; ++i) {
    decayed.push_back({offset, s.variables[i]});
    offset += s.variables[i];
  }
  std::vector<double> w2(decayed.size()), g2(decayed.size());
  b.sum_squares_per_range(s.weights, decayed, w2.data());
  b.sum_squares_per_range(s.grads, decayed, g2.data());  // the norm of g before the decay
  if (s.weight_decay != 0.f && s.decayed > 0) {
    b.axpy(s.weight_decay, s.weights, s.grads, s.decayed);
  }
  for (size_t r = 0; r < decayed.size(); ++r) {
    const double w = std::sqrt(w2[r]), g = std::sqrt(g2[r]);
    const double trust = w > 0 && g > 0 ? eeta * w / (g + wd * w + epsilon) : 1.0;
    const size_t at = decayed[r].offset;
    b.scale_add(accum + at, momentum, static_cast<float>(s.learning_rate * trust), s.grads + at,
                decayed[r].count);
  }
  const size_t d = s.decayed;
  b.scale_add(accum + d, momentum, s.learning_rate, s.grads + d, s.count - d);
  b.scale_add(s.weights, 1.f, -1.f, accum, s.count);
}

std::vector<Optimizer> make_optimizer_table() {
  using D = WeightDecayKind;
  return {
      {"sgd", "TensorFlow's GradientDescentOptimizer", {}, {}, D::coupled, sgd_update},
      {"momentum",
       "TensorFlow's MomentumOptimizer (Nesterov's for ResNet-50, as resnet_main.py)",
       {{"Momentum", 0.f}},
       {{"momentum", 0.9}},
       D::coupled,
       momentum_update},
      {"RMS",
       "TF1's RMSPropOptimizer with inception_v3.py's constants",
       {{"RMSProp", 1.f}, {"RMSProp_1", 0.f}},  // mean square (TF1 starts it at ones), momentum
       {{"decay", 0.9}, {"momentum", 0.9}, {"epsilon", 1.0}},
       D::coupled,
       rmsprop_update},
      {"adamw",
       "torch.optim.AdamW: Adam with decoupled weight decay (TF's Adam slot names)",
       {{"Adam", 0.f}, {"Adam_1", 0.f}},  // first and second moments
       {{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}},
       D::decoupled,
       adamw_update},
      {"lars",
       "LARS (You et al. 2017), as TF's LARSOptimizer in the TPU ResNet-50 recipe",
       {{"LARSOptimizer", 0.f}},  // its momentum, under the optimizer's name as TF's
       {{"momentum", 0.9}, {"eeta", 0.001}, {"epsilon", 0.0}},
       D::own,
       lars_update},
  };
}

}  // namespace

void Optimizer::apply(Backend& backend, const OptimizerStep& step,
                      std::span<const Hyperparameter> h) const {
  // The gradient of wd * Σw²/2 over the decayed kernels is wd * w.
  if (weight_decay == WeightDecayKind::coupled && step.weight_decay != 0.f && step.decayed > 0) {
    backend.axpy(step.weight_decay, step.weights, step.grads, step.decayed);
  }
  update(backend, step, h.empty() ? std::span<const Hyperparameter>(hyperparameters) : h);
}

const std::vector<Optimizer>& optimizer_table() {
  static const std::vector<Optimizer> table = make_optimizer_table();
  return table;
}

const Optimizer* find_optimizer(std::string_view name) {
  for (const Optimizer& o : optimizer_table()) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

std::vector<UpdateRange> describe_update_ranges(
    const ParamLayout& layout, const std::vector<ParamInfo>& params,
    const std::vector<std::pair<size_t, size_t>>& ranges) {
  std::vector<std::pair<size_t, size_t>> variables;  // (offset, count) of each trainable one
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].trainable) {
      variables.emplace_back(layout.offset[i], static_cast<size_t>(params[i].shape.numel()));
    }
  }
  std::sort(variables.begin(), variables.end());
  std::vector<UpdateRange> out;
  for (const auto& [offset, count] : ranges) {
    UpdateRange r;
    r.offset = offset;
    r.count = count;
    r.decayed = offset < layout.decayed_count ? std::min(count, layout.decayed_count - offset) : 0;
    for (const auto& [at, size] : variables) {
      if (at >= offset && at < offset + count) r.variables.push_back(size);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ic
