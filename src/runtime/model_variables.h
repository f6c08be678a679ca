// A model's variables on one device, in flat arenas of one ParamLayout: the trainable weights,
// the batch-norm moving statistics (the non-trainable "state"), the EMA shadows of both, and
// the global step. This is what training and inference share; train/model_state.h adds the
// gradients and the optimizer's slots. Checkpoint names are TF-slim's:
//   <var>                              weights and moving statistics
//   <var>/ExponentialMovingAverage     EMA shadows (weights and moving statistics)
//   global_step                        int64 scalar
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph/param_layout.h"
#include "io/checkpoint_contents.h"
#include "runtime/checkpoint_meta.h"

namespace ic {

class ModelVariables {
 public:
  // moving_average: the EMA shadows are kept too (and evaluation reads them).
  static Result<std::unique_ptr<ModelVariables>> create(Backend& backend, const Graph& graph,
                                                        bool moving_average);
  virtual ~ModelVariables() = default;

  // Fresh values: weights from their initialisers (seeded), moving mean 0 / variance 1, EMA
  // shadows equal to the values (TF creates a shadow with its variable's initial value).
  virtual Status initialize(uint64_t seed);

  // Loads the values a model is evaluated with into the eval arenas: the EMA shadows when
  // `use_ema` and present (LoadEMAHook), else the raw values. Errors name `path`.
  Status restore_for_eval(const CheckpointContents& file, bool use_ema, const std::string& path);
  // Loads already chosen values (f32, by parameter name, every parameter present with its
  // shape) into the eval arenas, as an InferenceModel holds them. Errors name `path`.
  Status load_eval_values(const std::map<std::string, TensorEntry>& values,
                          const std::string& path);

  // The checkpoint's tensors (downloaded to host memory owned by this object, valid until the
  // next call).
  std::vector<TensorView> checkpoint_tensors();

  // The graph's parameters are this layout's, by name and shape, in order.
  Status check_matches(const Graph& graph) const;

  ParamBinding eval_binding() const;  // the EMA arenas when kept, else the live ones

  Backend& backend() const { return backend_; }
  const ParamLayout& layout() const { return layout_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  bool has_ema() const { return moving_average_; }

  float* weights() const { return weights_.as<float>(); }
  float* ema_weights() const { return ema_weights_.as<float>(); }
  float* state() const { return state_.as<float>(); }
  float* ema_state() const { return ema_state_.as<float>(); }

  int64_t global_step = 0;

 protected:
  explicit ModelVariables(Backend& backend) : backend_(backend) {}
  Status allocate(const Graph& graph, bool moving_average);
  // At least one cache line, so an empty arena still has a valid pointer.
  Result<DeviceBuffer> allocate_floats(size_t count);

  // One checkpoint tensor per (parameter, arena) with its suffix.
  struct Slice {
    std::string name;
    size_t param;
    float* arena;
    bool trainable_arena;
  };
  // Every parameter's slices, in parameter order.
  std::vector<Slice> slices() const;
  // Parameter i's slices: its value, then its shadow when kept. A subclass appends its own.
  virtual void add_slices(size_t i, std::vector<Slice>* out) const;
  // The entry is f32 of the parameter's shape; the error names `path` and both shapes.
  static Status check_entry(const TensorEntry& entry, const ParamInfo& param,
                            const std::string& path);
  // Uploads find(param) for every parameter into the eval arenas; null: missing.
  using FindValue = std::function<const TensorEntry*(const ParamInfo&)>;
  Status upload_eval_values(const FindValue& find, const std::string& path);
  // Shadows start at the current values, as a fresh shadow of a restored variable would.
  void reset_shadows();

  Backend& backend_;
  std::vector<ParamInfo> params_;
  ParamLayout layout_;
  bool moving_average_ = false;

 private:
  DeviceBuffer weights_, ema_weights_, state_, ema_state_;
  std::vector<std::vector<float>> host_copies_;
  int64_t host_step_ = 0;
};

}  // namespace ic
