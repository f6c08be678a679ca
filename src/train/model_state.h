// What a training run keeps between steps: the model's variables (runtime/model_variables.h:
// weights, moving statistics, their EMA shadows, the global step) plus the gradients and the
// optimizer's slots, in flat device arenas of one ParamLayout. Converts to and from a
// checkpoint with TF-slim names; the slots are <var>/<slot>, named by the optimizer's table
// entry (train/optimizer.cc): <var>/RMSProp, <var>/RMSProp_1, <var>/Momentum, <var>/Adam, ...
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/model_variables.h"
#include "train/optimizer.h"

namespace ic {

class ModelState : public ModelVariables {
 public:
  // training: gradients and the slots of `optimizer` (an optimizer table entry; may be null
  // when not training) are allocated; moving_average: EMA shadows.
  static Result<std::unique_ptr<ModelState>> create(Backend& backend, const Graph& graph,
                                                    const Optimizer* optimizer, bool training,
                                                    bool moving_average);

  // Fresh start: the variables' fresh values (ModelVariables::initialize), optimizer slots at
  // their entry's initial values (RMSProp's mean square at 1, as TF1's).
  Status initialize(uint64_t seed) override;

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

  ParamBinding train_binding() const { return ParamBinding{weights(), state(), grads()}; }
  const Optimizer* optimizer() const { return optimizer_; }

  float* grads() const { return grads_.as<float>(); }
  // The optimizer's slot arenas, in its entry's order (none unless training).
  size_t slot_count() const { return slots_.size(); }
  float* slot(size_t k) const { return slots_[k].as<float>(); }

 protected:
  // Parameter i's variables, then its optimizer slots.
  void add_slices(size_t i, std::vector<Slice>* out) const override;

 private:
  explicit ModelState(Backend& backend) : ModelVariables(backend) {}

  const Optimizer* optimizer_ = nullptr;
  bool training_ = false;
  DeviceBuffer grads_;
  std::vector<DeviceBuffer> slots_;
};

}  // namespace ic
