// The optimizer table: every optimizer the trainers can run (--optimizer), as the model registry
// (models/model_spec.h) is for networks. An entry says what the optimizer keeps per weight (its
// slots, with TensorFlow's checkpoint names and initial values), its hyper-parameters, how it
// takes weight decay, and its update, written with the backend's optimizer arithmetic
// (backend.h: scale_add and its kin), so it runs on every device with no kernel of its own.
// The trainer, the model state's slots, the flag and its --help all read the table; adding an
// optimizer is one entry in optimizer.cc (src/train/README.md shows one).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/param_layout.h"

namespace ic {

class Backend;

// One per-weight state of an optimizer: an arena of the trainable layout, saved as one tensor
// per variable.
struct OptimizerSlot {
  const char* suffix;   // the checkpoint's name for it is "<var>/<suffix>": TensorFlow's
  float initial_value;  // a fresh run's value (also a resumed run's when the checkpoint lacks it)
};

// A hyper-parameter under TensorFlow's name for it, with the value the trainers use: the
// reference program's where it sets one (inception_v3.py's RMSProp), else TensorFlow's default.
// (Double, so that an update may form 1 - beta or beta^t as the reference frameworks do.)
struct Hyperparameter {
  const char* name;
  double value;
};

// How --weight_decay (the L2 factor on the decayed kernels: wd * Σw²/2) reaches the weights.
enum class WeightDecayKind {
  coupled,    // wd*w joins the gradient before the update, as the L2 loss's gradient does in TF
  decoupled,  // the update shrinks the weights by lr*wd itself, apart from the moments (AdamW)
  own,        // the update folds it in where its paper says (LARS: trust ratio and momentum)
};

// The most slots an entry may have.
constexpr size_t kMaxOptimizerSlots = 4;

// One update over a range of the trainable arena made of whole, adjacent variables: every
// pointer is at the range's first element.
struct OptimizerStep {
  float* weights = nullptr;
  float* grads = nullptr;  // the (replica-averaged) gradient; an update may overwrite it
  std::array<float*, kMaxOptimizerSlots> slots{};  // the entry's slots, in its order
  size_t count = 0;                                // elements in the range
  size_t decayed = 0;  // the first `decayed` of them are weight-decayed kernels; the rest are
                       // biases and batch norm's beta and gamma
  std::span<const size_t> variables;  // each variable's element count, in arena order
  float learning_rate = 0.f;
  float weight_decay = 0.f;
  int64_t step = 1;       // this update's number, counting from 1 (Adam's bias correction)
  bool nesterov = false;  // the model's momentum is Nesterov's (ResNet-50; momentum reads it)
};

struct Optimizer {
  const char* name;   // --optimizer's value (the reference's spellings: sgd, momentum, RMS)
  const char* about;  // one line for the docs: whose update it is
  std::vector<OptimizerSlot> slots;
  std::vector<Hyperparameter> hyperparameters;
  WeightDecayKind weight_decay;
  // The update after any coupled weight decay; `h` is `hyperparameters`, in its order.
  void (*update)(Backend& backend, const OptimizerStep& step, std::span<const Hyperparameter> h);

  // One step: wd*w into the gradient of the decayed elements when the entry's decay is coupled,
  // then the update, with `h` (the entry's hyper-parameters, in its order, as a run sets them;
  // empty: the entry's own values).
  void apply(Backend& backend, const OptimizerStep& step,
             std::span<const Hyperparameter> h = {}) const;
};

// Every entry, in the order --help lists them.
const std::vector<Optimizer>& optimizer_table();
// The entry named `name` (case-sensitive, as the reference's flag); null when there is none.
const Optimizer* find_optimizer(std::string_view name);

// A range of the trainable arena as an update sees it.
struct UpdateRange {
  size_t offset = 0, count = 0;   // elements of the trainable arena
  size_t decayed = 0;             // how many of them, from the first, are weight-decayed
  std::vector<size_t> variables;  // the element count of each variable in it, in arena order
};
// The ranges [offset, offset + count) of the trainable arena (each made of whole variables)
// described for the optimizer from the layout.
std::vector<UpdateRange> describe_update_ranges(
    const ParamLayout& layout, const std::vector<ParamInfo>& params,
    const std::vector<std::pair<size_t, size_t>>& ranges);

}  // namespace ic
