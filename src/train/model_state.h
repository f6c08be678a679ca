// Everything a run keeps between steps, in flat device arenas of one ParamLayout: weights,
// gradients, optimizer slots, EMA shadows of the weights, moving statistics and their EMA,
// plus the global step. Converts to and from a checkpoint with TF-slim names:
//   <var>                              weights and moving statistics
//   <var>/ExponentialMovingAverage     EMA shadows (weights and moving statistics)
//   <var>/<slot>                       the optimizer's slots, named by its table entry
//                                      (train/optimizer.cc): <var>/RMSProp, <var>/Momentum, ...
//   global_step                        int64 scalar
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph/param_layout.h"
#include "io/checkpoint_contents.h"
#include "train/optimizer.h"

namespace ic {

// What a checkpoint holds a model of; stored as the checkpoint metadata (the bundle's
// metadata entry, or the safetensors __metadata__).
struct CheckpointMeta {
  std::string model;
  int64_t num_classes = 0;
  int height = 0, width = 0;
  double depth_multiplier = 1.0;
  std::string flags;  // the command line's flags, for the record
};
constexpr const char* kCheckpointFormatVersion = "1";

std::map<std::string, std::string> checkpoint_metadata(const CheckpointMeta& meta);
// Fails when a key is missing or malformed, naming `path`.
Result<CheckpointMeta> parse_checkpoint_metadata(const std::map<std::string, std::string>& metadata,
                                                 const std::string& path);
// "inception_v3, 1001 classes, depth_multiplier 1, 299x299 images"
std::string describe(const CheckpointMeta& meta);
// The checkpoint's global_step (int64 or int32 scalar); errors name `path`.
Result<int64_t> read_global_step(const CheckpointContents& file, const std::string& path);
// The model, class count and depth multiplier must agree (they decide every tensor shape);
// the message gives both descriptions.
Status check_compatible(const CheckpointMeta& saved, const CheckpointMeta& run,
                        const std::string& path);

class ModelState {
 public:
  // training: gradients and the slots of `optimizer` (an optimizer table entry; may be null
  // when not training) are allocated; moving_average: EMA shadows.
  static Result<std::unique_ptr<ModelState>> create(Backend& backend, const Graph& graph,
                                                    const Optimizer* optimizer, bool training,
                                                    bool moving_average);

  // Fresh start: weights from their initialisers (seeded), moving mean 0 / variance 1,
  // optimizer slots at their entry's initial values (RMSProp's mean square at 1, as TF1's),
  // EMA shadows equal to the values (TF creates a shadow with its variable's initial value).
  Status initialize(uint64_t seed);

  // Resumes training: every tensor of the layout must be present with its shape. Optimizer
  // slots or EMA shadows missing from the file (another --optimizer or --moving_average)
  // start fresh, and `notes` says so.
  Status restore_for_training(const CheckpointContents& file, const std::string& path,
                              std::vector<std::string>* notes);
  // A fresh run initialised from another checkpoint's values (TensorFlow's warm start, TF-slim's
  // fine-tuning): after initialize(seed), every weight and moving statistic found in `file`
  // under its TF-slim name as float32 of the model's shape is loaded; the rest keep their fresh
  // values. EMA shadows start at the resulting values, optimizer slots and global_step stay
  // fresh. `loaded` gets the names loaded; `skipped` one line per variable not loaded, with why.
  // An error when nothing at all matches (the wrong checkpoint, most likely).
  Status warm_start(const CheckpointContents& file, const std::string& path,
                    std::vector<std::string>* loaded, std::vector<std::string>* skipped);
  // Loads the values a model is evaluated with into the eval arenas: the EMA shadows when
  // `use_ema` and present (LoadEMAHook), else the raw values.
  Status restore_for_eval(const CheckpointContents& file, bool use_ema, const std::string& path);

  // The checkpoint's tensors (downloaded to host memory owned by this object, valid until the
  // next call).
  std::vector<TensorView> checkpoint_tensors();

  ParamBinding train_binding() const;
  ParamBinding eval_binding() const;  // the EMA arenas when kept, else the live ones

  Backend& backend() const { return backend_; }
  const ParamLayout& layout() const { return layout_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  const Optimizer* optimizer() const { return optimizer_; }
  bool has_ema() const { return moving_average_; }

  float* weights() const { return weights_.as<float>(); }
  float* grads() const { return grads_.as<float>(); }
  // The optimizer's slot arenas, in its entry's order (none unless training).
  size_t slot_count() const { return slots_.size(); }
  float* slot(size_t k) const { return slots_[k].as<float>(); }
  float* ema_weights() const { return ema_weights_.as<float>(); }
  float* state() const { return state_.as<float>(); }
  float* ema_state() const { return ema_state_.as<float>(); }

  int64_t global_step = 0;

 private:
  ModelState(Backend& backend) : backend_(backend) {}
  // One checkpoint tensor per (parameter, arena) with its suffix.
  struct Slice {
    std::string name;
    size_t param;
    float* arena;
    bool trainable_arena;
  };
  std::vector<Slice> slices() const;

  Backend& backend_;
  std::vector<ParamInfo> params_;
  ParamLayout layout_;
  const Optimizer* optimizer_ = nullptr;
  bool training_ = false, moving_average_ = false;
  DeviceBuffer weights_, grads_, ema_weights_, state_, ema_state_;
  std::vector<DeviceBuffer> slots_;
  std::vector<std::vector<float>> host_copies_;
  int64_t host_step_ = 0;
};

}  // namespace ic
