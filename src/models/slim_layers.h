// TF-slim's layer vocabulary on top of GraphBuilder, for the model files. TF-slim sets layer
// defaults with arg_scope (hidden state); here they are the explicit `defaults` of a
// SlimLayers, and a call overrides them with LayerArgs, as slim's keyword arguments do:
//   net = slim.conv(net, slim.depth(32), {3, 3}, "Conv2d_1a_3x3", LayerArgs().stride(2).valid());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "models/model.h"

namespace ic::models {

struct Kernel {
  int h = 1, w = 1;
};

// What slim.conv2d / slim.*_pool2d get when a call does not say otherwise (arg_scope).
struct ConvDefaults {
  int stride = 1;
  Padding padding = Padding::same;
};

// Per-call overrides, chained: LayerArgs().stride(2).valid().
struct LayerArgs {
  int stride_override = 0;                  // 0: defaults.stride
  std::optional<Padding> padding_override;  // unset: defaults.padding
  bool relu_after = true;                   // false: BatchNorm without ReLU (ResNet's conv3)
  std::optional<ParamInit> init_override;   // unset: variance scaling (slim's conv default)

  LayerArgs& stride(int s) {
    stride_override = s;
    return *this;
  }
  LayerArgs& valid() {
    padding_override = Padding::valid;
    return *this;
  }
  LayerArgs& same() {
    padding_override = Padding::same;
    return *this;
  }
  LayerArgs& no_relu() {
    relu_after = false;
    return *this;
  }
  LayerArgs& init(ParamInit i) {
    init_override = i;
    return *this;
  }
};

// Builds the layers of one network under one top-level scope ("InceptionV3"): every name a
// call takes is relative to it ("Mixed_5b/Branch_1/Conv2d_0b_5x5").
class SlimLayers {
 public:
  SlimLayers(GraphBuilder& builder, const ModelOptions& options, std::string scope,
             bool batch_norm_gamma);

  ConvDefaults defaults;

  // TF-slim's depth(): max(int(d * depth_multiplier), min_depth).
  int64_t depth(int64_t d) const;

  // slim.conv2d under the arg_scope: conv (no bias) + BatchNorm (+ ReLU, fused).
  // Parameters "<scope>/<name>/weights" [kh,kw,Ci,Co], "<scope>/<name>/BatchNorm/beta"...
  ValueId conv(ValueId x, int64_t filters, Kernel kernel, const std::string& name,
               const LayerArgs& args = {});
  // slim.conv2d with normalizer_fn=None, activation_fn=None: conv + biases (logit layers).
  ValueId conv_logits(ValueId x, int64_t filters, Kernel kernel, const std::string& name,
                      ParamInit init, const LayerArgs& args = {});
  ValueId max_pool(ValueId x, int kernel, const std::string& name, const LayerArgs& args = {});
  ValueId avg_pool(ValueId x, Kernel kernel, const std::string& name, const LayerArgs& args = {});
  ValueId concat(const std::vector<ValueId>& xs, const std::string& name);
  ValueId dropout(ValueId x, const std::string& name);
  ValueId dense(ValueId x, int64_t units, ParamInit init, const std::string& name);
  // [N,H,W,C] -> [N,H*W*C] (slim.flatten, tf.squeeze of 1x1 maps).
  ValueId flatten(ValueId x, const std::string& name);
  ValueId add_relu(ValueId a, ValueId b, const std::string& name);
  ValueId global_avg_pool(ValueId x, const std::string& name);

  // Records a TF-slim end point (relative name) and returns x.
  ValueId endpoint(const std::string& name, ValueId x);

  const Shape& shape(ValueId x) const { return builder_.shape(x); }
  GraphBuilder& builder() { return builder_; }

 private:
  std::string full(const std::string& name) const { return scope_ + "/" + name; }
  int stride(const LayerArgs& args) const {
    return args.stride_override ? args.stride_override : defaults.stride;
  }
  Padding padding(const LayerArgs& args) const {
    return args.padding_override.value_or(defaults.padding);
  }

  GraphBuilder& builder_;
  const ModelOptions& options_;
  std::string scope_;
  bool batch_norm_gamma_;
  double depth_multiplier_;
};

// Output side of a VALID window op; 0 when the input is smaller than the window (TensorFlow
// would reject the op), and 0 stays 0 through a chain of calls.
int64_t valid_side(int64_t in, int kernel, int stride);

// Grid sizes of one image side at the 17 x 17 and 8 x 8 stages of Inception v3 and v4, whose
// stems shrink an image alike (0: the stem cannot run).
struct InceptionGrid {
  int64_t s17 = 0, s8 = 0;
};
InceptionGrid inception_grid(int64_t side);

// TF-slim's _reduced_kernel_size_for_small_input, one side at a time.
int reduced_kernel(int64_t side, int kernel);

// slim.conv2d's variance-scaling initialiser, for the layers that set it explicitly.
constexpr ParamInit kVarianceScaling{ParamInit::Kind::variance_scaling, 0.f};

// "Conv2d_2a_5x5" from ("Conv2d_2a", {5, 5}): slim names layers after reduced kernels.
std::string kernel_name(const std::string& prefix, Kernel kernel);

// The ends of a network body: logits [N,classes] and, for Inception, AuxLogits [N,classes].
struct NetworkOutputs {
  ValueId logits = kNone;
  ValueId aux_logits = kNone;
};

// The networks (one file each). They assume supported_image_sides() accepted the options.
NetworkOutputs build_inception_v3(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options);
NetworkOutputs build_inception_v4(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options);
NetworkOutputs build_resnet50(GraphBuilder& builder, ValueId images, const ModelOptions& options);

// Whether one image side (height or width) fits the network; the model files know their
// grid reductions.
bool inception_v3_side_fits(int64_t side, bool aux_logits);
bool inception_v4_side_fits(int64_t side);
bool resnet50_side_fits(int64_t side);

}  // namespace ic::models
