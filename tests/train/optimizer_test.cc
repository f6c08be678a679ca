// The optimizer table (train/optimizer.h): sgd, momentum (plain and Nesterov) and RMS give, bit
// for bit, the updates the trainer computed before the table existed (the CPU backend's fused
// loops and the trainer's weight decay and Nesterov lines, copied below as the reference), over
// the whole arena and over --trainable_scopes-style sub-ranges; AdamW and LARS follow their
// formulas; the table is well formed. (tests/interop/check_optimizers.py checks AdamW against
// torch.optim.AdamW and LARS against NumPy.)
#include "train/optimizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "models/model_spec.h"
#include "train/choices.h"
#include "train/model_state.h"

namespace ic {
namespace {

// ---- The reference: the updates as they were computed before the optimizer table ----------
namespace before {

// backend.h's OptimizerArgs.
struct OptimizerArgs {
  float* params = nullptr;
  const float* grads = nullptr;
  float* slot1 = nullptr;  // RMSProp: mean square ("RMSProp"); momentum: accumulator
  float* slot2 = nullptr;  // RMSProp: momentum ("RMSProp_1")
  size_t count = 0;
  float learning_rate = 0.f;
};

// The CPU backend's loops (cpu_backend.cc), each over [0, count) instead of a thread's chunk.
void axpy(float a, const float* x, float* y, size_t count) {
  for (size_t i = 0; i < count; ++i) y[i] += a * x[i];
}
void rmsprop_update(const OptimizerArgs& a, float decay, float momentum, float epsilon) {
  for (size_t i = 0; i < a.count; ++i) {
    const float g = a.grads[i];
    const float ms = decay * a.slot1[i] + (1.f - decay) * g * g;
    const float mom = momentum * a.slot2[i] + a.learning_rate * g / std::sqrt(ms + epsilon);
    a.slot1[i] = ms;
    a.slot2[i] = mom;
    a.params[i] -= mom;
  }
}
void momentum_update(const OptimizerArgs& a, float momentum) {
  for (size_t i = 0; i < a.count; ++i) {
    const float accum = momentum * a.slot1[i] + a.grads[i];
    a.slot1[i] = accum;
    a.params[i] -= a.learning_rate * accum;
  }
}
void sgd_update(const OptimizerArgs& a) {
  for (size_t i = 0; i < a.count; ++i) a.params[i] -= a.learning_rate * a.grads[i];
}

enum class Kind { sgd, momentum, rmsprop };
// TrainRecipe's constants.
constexpr float kRmspropDecay = 0.9f, kRmspropMomentum = 0.9f, kRmspropEpsilon = 1.0f;
constexpr float kMomentum = 0.9f;

// Trainer::step's loop body for one range (offset, count) of the trainable arena.
void step(Kind kind, bool nesterov, float weight_decay, size_t decayed_count, float lr,
          float* all_weights, float* all_grads, float* all_slot1, float* all_slot2, size_t offset,
          size_t count) {
  float* weights = all_weights + offset;
  float* grad = all_grads + offset;
  const size_t decayed = offset < decayed_count ? std::min(count, decayed_count - offset) : 0;
  if (weight_decay != 0.f && decayed > 0) {
    axpy(weight_decay, weights, grad, decayed);
  }
  float* slot1 = all_slot1 ? all_slot1 + offset : nullptr;
  float* slot2 = all_slot2 ? all_slot2 + offset : nullptr;
  OptimizerArgs args{weights, grad, slot1, slot2, count, lr};
  switch (kind) {
    case Kind::rmsprop:
      rmsprop_update(args, kRmspropDecay, kRmspropMomentum, kRmspropEpsilon);
      break;
    case Kind::momentum:
      momentum_update(args, kMomentum);  // accum = m*accum + g; p -= lr*accum
      if (nesterov) {
        // TF's use_nesterov: p -= lr*g + lr*m*accum. The plain update took lr*accum, so
        // add back lr*(1-m)*accum and take lr*g.
        axpy(-lr, grad, weights, count);
        axpy(lr * (1.f - kMomentum), slot1, weights, count);
      }
      break;
    case Kind::sgd: sgd_update(args); break;
  }
}

}  // namespace before

// ---- Fixtures --------------------------------------------------------------------------------

std::unique_ptr<Backend> cpu() {
  auto backend = make_cpu_backend(BackendOptions{});
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return std::move(backend).value();
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A trainable arena as ParamLayout lays one out: the decayed kernels first, then biases and
// batch norm's beta/gamma. Large enough that the CPU backend splits its passes over threads.
struct Arena {
  std::vector<size_t> sizes;  // in arena order
  size_t decayed_count = 0;
  size_t count = 0;
};
Arena test_arena() {
  Arena a;
  a.sizes = {3 * 3 * 16 * 32, 40000, 1, 27000, 864, 64, 64, 1001, 32, 7};
  const size_t decayed_variables = 5;
  for (size_t i = 0; i < a.sizes.size(); ++i) {
    if (i < decayed_variables) a.decayed_count += a.sizes[i];
    a.count += a.sizes[i];
  }
  return a;
}

// The (offset, count) of variables [first, last) of the arena.
std::pair<size_t, size_t> variables_range(const Arena& a, size_t first, size_t last) {
  size_t offset = 0, count = 0;
  for (size_t i = 0; i < last; ++i) (i < first ? offset : count) += a.sizes[i];
  return {offset, count};
}

// What describe_update_ranges gives for `ranges` of the arena (built here from the sizes, so
// the test does not rest on the function it also checks).
std::vector<UpdateRange> update_ranges(const Arena& a,
                                       const std::vector<std::pair<size_t, size_t>>& ranges) {
  std::vector<UpdateRange> out;
  for (const auto& [offset, count] : ranges) {
    UpdateRange r{offset, count, 0, {}};
    r.decayed = offset < a.decayed_count ? std::min(count, a.decayed_count - offset) : 0;
    size_t at = 0;
    for (size_t size : a.sizes) {
      if (at >= offset && at < offset + count) r.variables.push_back(size);
      at += size;
    }
    out.push_back(r);
  }
  return out;
}

// Runs `steps` steps of the table's entry and of the reference on the same random data, over
// `ranges`, and requires every arena to be equal byte for byte after each step.
void expect_bit_identical(const char* name, before::Kind kind, bool nesterov,
                          const std::vector<std::pair<size_t, size_t>>& ranges) {
  SCOPED_TRACE(std::string(name) + (nesterov ? " (Nesterov)" : ""));
  const Optimizer* optimizer = find_optimizer(name);
  ASSERT_NE(optimizer, nullptr);
  const Arena arena = test_arena();
  const size_t n = arena.count;
  auto backend = cpu();
  const float weight_decay = 4e-4f;

  // Theirs and ours start equal: weights random, slots at TF's initial values.
  std::vector<float> w_ref = random_floats(n, 1), w = w_ref;
  std::vector<std::vector<float>> slots_ref, slots;
  for (const OptimizerSlot& slot : optimizer->slots) {
    slots_ref.emplace_back(n, slot.initial_value);
  }
  slots = slots_ref;
  const std::vector<float> w_start = w_ref;
  const std::vector<UpdateRange> described = update_ranges(arena, ranges);

  for (int k = 0; k < 5; ++k) {
    std::vector<float> g_ref = random_floats(n, 100 + k, -2.f, 2.f), g = g_ref;
    const float lr = 0.165f / (1.f + 0.37f * static_cast<float>(k));
    for (size_t r = 0; r < ranges.size(); ++r) {
      before::step(kind, nesterov, weight_decay, arena.decayed_count, lr, w_ref.data(),
                   g_ref.data(), slots_ref.empty() ? nullptr : slots_ref[0].data(),
                   slots_ref.size() < 2 ? nullptr : slots_ref[1].data(), ranges[r].first,
                   ranges[r].second);
      OptimizerStep step;
      const size_t offset = described[r].offset;
      step.weights = w.data() + offset;
      step.grads = g.data() + offset;
      for (size_t s = 0; s < slots.size(); ++s) step.slots[s] = slots[s].data() + offset;
      step.count = described[r].count;
      step.decayed = described[r].decayed;
      step.variables = described[r].variables;
      step.learning_rate = lr;
      step.weight_decay = weight_decay;
      step.step = k + 1;
      step.nesterov = nesterov;
      optimizer->apply(*backend, step);
    }
    ASSERT_EQ(std::memcmp(w.data(), w_ref.data(), n * sizeof(float)), 0) << "weights, step " << k;
    ASSERT_EQ(std::memcmp(g.data(), g_ref.data(), n * sizeof(float)), 0) << "grads, step " << k;
    for (size_t s = 0; s < slots.size(); ++s) {
      ASSERT_EQ(std::memcmp(slots[s].data(), slots_ref[s].data(), n * sizeof(float)), 0)
          << optimizer->slots[s].suffix << ", step " << k;
    }
  }
  // Outside the ranges nothing moved (and inside, something did).
  std::vector<bool> inside(n, false);
  for (const auto& [offset, count] : ranges) {
    for (size_t i = offset; i < offset + count; ++i) inside[i] = true;
  }
  size_t moved = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!inside[i]) {
      ASSERT_EQ(w[i], w_start[i]) << i;
    }
    moved += w[i] != w_start[i];
  }
  EXPECT_GT(moved, n / 4);
}

// The whole arena; then --trainable_scopes-style ranges: one that crosses from the decayed
// kernels into the biases, one of decayed kernels only, one of biases only.
const std::vector<std::vector<std::pair<size_t, size_t>>>& range_sets() {
  static const std::vector<std::vector<std::pair<size_t, size_t>>> sets = [] {
    const Arena a = test_arena();
    return std::vector<std::vector<std::pair<size_t, size_t>>>{
        {{0, a.count}},
        {variables_range(a, 1, 2), variables_range(a, 3, 7), variables_range(a, 8, 10)},
    };
  }();
  return sets;
}

TEST(OptimizerTable, SgdIsBitIdenticalToTheFusedUpdate) {
  for (const auto& ranges : range_sets()) {
    expect_bit_identical("sgd", before::Kind::sgd, false, ranges);
  }
}

TEST(OptimizerTable, MomentumIsBitIdenticalToTheFusedUpdate) {
  for (const auto& ranges : range_sets()) {
    expect_bit_identical("momentum", before::Kind::momentum, false, ranges);
    expect_bit_identical("momentum", before::Kind::momentum, true, ranges);
  }
}

TEST(OptimizerTable, RmspropIsBitIdenticalToTheFusedUpdate) {
  for (const auto& ranges : range_sets()) {
    expect_bit_identical("RMS", before::Kind::rmsprop, false, ranges);
  }
}

TEST(OptimizerTable, DescribeUpdateRangesFollowsTheLayout) {
  // Three kernels (decayed) and two biases, declared interleaved as a graph declares them.
  Graph graph;
  const std::vector<std::pair<int64_t, bool>> params = {
      {12, true}, {3, false}, {20, true}, {5, false}, {7, true}};
  for (size_t i = 0; i < params.size(); ++i) {
    ParamInfo p;
    p.name = "v" + std::to_string(i);
    p.shape = Shape{params[i].first};
    p.weight_decay = params[i].second;
    graph.params.push_back(p);
  }
  ParamInfo stat;  // moving statistics are not in the trainable arena
  stat.name = "moving_mean";
  stat.shape = Shape{9};
  stat.trainable = false;
  graph.params.push_back(stat);
  const ParamLayout layout = ParamLayout::plan(graph);
  ASSERT_EQ(layout.decayed_count, 39u);
  // The arena: v0 v2 v4 | v1 v3.
  const std::vector<UpdateRange> r =
      describe_update_ranges(layout, graph.params, {{0, 47}, {12, 30}, {39, 3}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].decayed, 39u);
  EXPECT_EQ(r[0].variables, (std::vector<size_t>{12, 20, 7, 3, 5}));
  EXPECT_EQ(r[1].offset, 12u);
  EXPECT_EQ(r[1].decayed, 27u);
  EXPECT_EQ(r[1].variables, (std::vector<size_t>{20, 7, 3}));
  EXPECT_EQ(r[2].decayed, 0u);
  EXPECT_EQ(r[2].variables, (std::vector<size_t>{3}));
}

// One AdamW step from zero moments, in double: the bias-corrected moments are g and g², so
// the step is lr * g / (|g| + eps) after the decoupled decay, which spares the biases.
TEST(OptimizerTable, AdamwFirstStepIsDecoupledDecayThenSignedStep) {
  const Optimizer* adamw = find_optimizer("adamw");
  ASSERT_NE(adamw, nullptr);
  EXPECT_EQ(adamw->weight_decay, WeightDecayKind::decoupled);
  auto backend = cpu();
  const size_t n = 1000, decayed = 600;
  const std::vector<float> w0 = random_floats(n, 7), g0 = random_floats(n, 8);
  std::vector<float> w = w0, g = g0, m(n, 0.f), v(n, 0.f);
  const std::vector<size_t> variables = {600, 400};
  OptimizerStep step;
  step.weights = w.data();
  step.grads = g.data();
  step.slots = {m.data(), v.data()};
  step.count = n;
  step.decayed = decayed;
  step.variables = variables;
  step.learning_rate = 0.01f;
  step.weight_decay = 0.1f;
  step.step = 1;
  adamw->apply(*backend, step);
  EXPECT_EQ(g, g0);  // decoupled: the gradient is not touched
  for (size_t i = 0; i < n; ++i) {
    const double shrink = i < decayed ? 1 - 0.01 * 0.1 : 1.0;
    const double expected = w0[i] * shrink - 0.01 * g0[i] / (std::fabs(g0[i]) + 1e-8);
    ASSERT_NEAR(w[i], expected, 1e-6) << i;
    ASSERT_NEAR(m[i], 0.1 * g0[i], 1e-7) << i;
    ASSERT_NEAR(v[i], 0.001 * g0[i] * g0[i], 1e-9) << i;
  }
}

// One LARS step from a zero momentum, in double: each decayed variable's update is
// lr * trust * (g + wd*w) with its own trust ratio; a variable with a zero gradient has ratio 1
// (and moves by its decay only); the biases take lr * g, undecayed.
TEST(OptimizerTable, LarsScalesEachDecayedVariableByItsTrustRatio) {
  const Optimizer* lars = find_optimizer("lars");
  ASSERT_NE(lars, nullptr);
  EXPECT_EQ(lars->weight_decay, WeightDecayKind::own);
  auto backend = cpu();
  const std::vector<size_t> variables = {300, 50, 200, 10};  // three kernels, one bias
  const size_t n = 560, decayed = 550;
  const std::vector<float> w0 = random_floats(n, 9);
  std::vector<float> g0 = random_floats(n, 10, -0.01f, 0.01f);
  for (size_t i = 300; i < 350; ++i) g0[i] = 0.f;  // the second kernel's gradient is zero
  std::vector<float> w = w0, g = g0, accum(n, 0.f);
  const float lr = 3.f, wd = 1e-3f;
  OptimizerStep step;
  step.weights = w.data();
  step.grads = g.data();
  step.slots[0] = accum.data();
  step.count = n;
  step.decayed = decayed;
  step.variables = variables;
  step.learning_rate = lr;
  step.weight_decay = wd;
  lars->apply(*backend, step);
  size_t begin = 0;
  for (size_t v = 0; v < variables.size(); ++v) {
    const size_t end = begin + variables[v];
    double w2 = 0, g2 = 0;
    for (size_t i = begin; i < end; ++i) {
      w2 += double{w0[i]} * w0[i];
      g2 += double{g0[i]} * g0[i];
    }
    const bool decay = end <= decayed;
    const double trust =
        decay && g2 > 0 ? 0.001 * std::sqrt(w2) / (std::sqrt(g2) + wd * std::sqrt(w2)) : 1.0;
    for (size_t i = begin; i < end; ++i) {
      const double update = lr * trust * (g0[i] + (decay ? wd * w0[i] : 0.0));
      ASSERT_NEAR(accum[i], update, 1e-6 * (1e-3 + std::fabs(update))) << v << " " << i;
      ASSERT_NEAR(w[i], w0[i] - update, 1e-6) << v << " " << i;
    }
    begin = end;
  }
}

TEST(OptimizerTable, EntriesAreWellFormed) {
  std::set<std::string> names;
  for (const Optimizer& o : optimizer_table()) {
    SCOPED_TRACE(o.name);
    EXPECT_TRUE(names.insert(o.name).second) << "two entries named " << o.name;
    EXPECT_EQ(find_optimizer(o.name), &o);
    EXPECT_LE(o.slots.size(), kMaxOptimizerSlots);
    EXPECT_NE(o.update, nullptr);
    EXPECT_GT(std::string(o.about).size(), 0u);
    std::set<std::string> suffixes;
    for (const OptimizerSlot& s : o.slots) EXPECT_TRUE(suffixes.insert(s.suffix).second);
  }
  // The reference's spellings first, then ours.
  EXPECT_EQ(names, (std::set<std::string>{"sgd", "momentum", "RMS", "adamw", "lars"}));
  EXPECT_EQ(find_optimizer("rms"), nullptr);
  // TensorFlow's slot names, so its tools read the checkpoints' slots.
  EXPECT_STREQ(find_optimizer("RMS")->slots[0].suffix, "RMSProp");
  EXPECT_EQ(find_optimizer("RMS")->slots[0].initial_value, 1.f);
  EXPECT_STREQ(find_optimizer("RMS")->slots[1].suffix, "RMSProp_1");
  EXPECT_STREQ(find_optimizer("momentum")->slots[0].suffix, "Momentum");
  EXPECT_STREQ(find_optimizer("adamw")->slots[0].suffix, "Adam");
  EXPECT_STREQ(find_optimizer("adamw")->slots[1].suffix, "Adam_1");
  EXPECT_STREQ(find_optimizer("lars")->slots[0].suffix, "LARSOptimizer");
  EXPECT_TRUE(find_optimizer("sgd")->slots.empty());
}

TEST(OptimizerTable, IsTheOptimizerFlagsChoices) {
  std::vector<std::string> flag_names, table_names;
  for (const auto& c : Choices<const Optimizer*>::names) {
    flag_names.push_back(c.name);
    EXPECT_STREQ(c.value->name, c.name);
  }
  for (const Optimizer& o : optimizer_table()) table_names.push_back(o.name);
  EXPECT_EQ(flag_names, table_names);
  EXPECT_EQ(parse_choice<const Optimizer*>("adamw"), find_optimizer("adamw"));
  EXPECT_STREQ(choice_name(find_optimizer("lars")), "lars");
}

// A training model state holds the entry's slots, under <var>/<suffix>, at their initial values.
TEST(OptimizerTable, ModelStateKeepsTheEntrysSlots) {
  Graph graph;
  ParamInfo kernel;
  kernel.name = "Net/Conv/weights";
  kernel.shape = Shape{2, 3};
  kernel.weight_decay = true;
  graph.params.push_back(kernel);
  auto backend = cpu();
  for (const Optimizer& o : optimizer_table()) {
    SCOPED_TRACE(o.name);
    auto state = ModelState::create(*backend, graph, &o, true, false);
    ASSERT_TRUE(state.ok()) << state.status().message();
    ASSERT_TRUE((*state)->initialize(1).ok());
    ASSERT_EQ((*state)->slot_count(), o.slots.size());
    std::vector<std::string> names;
    for (const TensorView& t : (*state)->checkpoint_tensors()) {
      names.push_back(t.name);
      for (const OptimizerSlot& slot : o.slots) {
        if (t.name != kernel.name + "/" + slot.suffix) continue;
        const float* v = static_cast<const float*>(t.data);
        for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], slot.initial_value) << t.name;
      }
    }
    EXPECT_EQ(names.size(), 2 + o.slots.size());  // the kernel, its slots, global_step
    for (const OptimizerSlot& slot : o.slots) {
      EXPECT_NE(std::find(names.begin(), names.end(), kernel.name + "/" + slot.suffix),
                names.end());
    }
  }
  EXPECT_FALSE(ModelState::create(*backend, graph, nullptr, true, false).ok());
  EXPECT_TRUE(ModelState::create(*backend, graph, nullptr, false, false).ok());
}

TEST(OptimizerTable, EveryModelNamesAnEntry) {
  for (const ModelSpec* spec : model_registry()) {
    EXPECT_NE(find_optimizer(spec->recipe.optimizer), nullptr) << spec->name;
  }
}

// A run's own hyper-parameters replace the entry's: RMSProp's first step from TF1's ones for
// the mean square, with the Inception applications' epsilon (1.0) and EfficientNet's (0.001).
TEST(OptimizerTable, RmspropTakesTheRunsEpsilon) {
  const Optimizer* rms = find_optimizer("RMS");
  ASSERT_NE(rms, nullptr);
  auto backend = cpu();
  for (const double epsilon : {1.0, 0.001}) {
    std::vector<Hyperparameter> h = rms->hyperparameters;
    for (Hyperparameter& p : h)
      if (std::string(p.name) == "epsilon") p.value = epsilon;
    float w = 1.f, g = 2.f, ms = 1.f, mom = 0.f;
    const size_t sizes[] = {1};
    OptimizerStep step;
    step.weights = &w;
    step.grads = &g;
    step.slots[0] = &ms;
    step.slots[1] = &mom;
    step.count = 1;
    step.variables = sizes;
    step.learning_rate = 0.1f;
    rms->apply(*backend, step, h);
    // ms = 0.9 * 1 + 0.1 * 2^2; mom = lr * g / sqrt(ms + epsilon); w -= mom.
    EXPECT_NEAR(ms, 1.3f, 1e-6f) << epsilon;
    EXPECT_NEAR(w, 1.0 - 0.1 * 2 / std::sqrt(1.3 + epsilon), 1e-6) << epsilon;
  }
}

}  // namespace
}  // namespace ic
