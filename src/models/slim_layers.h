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

// slim.conv2d's variance-scaling initialiser, for the layers that set it explicitly.
constexpr ParamInit kVarianceScaling{ParamInit::Kind::variance_scaling, 0.f};

struct Kernel {
  int h = 1, w = 1;
};

// What slim.conv2d / slim.*_pool2d get when a call does not say otherwise (arg_scope).
struct ConvDefaults {
  int stride = 1;
  Padding padding = Padding::same;
};

// The rest of an arg_scope: the activation after each BatchNorm (slim's activation_fn; unset
// is ReLU, fused into the BatchNorm; the MobileNets set ReLU6), the kernels' initialiser
// (unset is slim.conv2d's variance scaling), and whether biases are weight-decayed (slim's
// regularizer covers the kernels only; EfficientNet's L2 loss every variable but batch norm's).
struct ArgScope {
  std::optional<Activation> activation;
  std::optional<ParamInit> init;
  bool decay_biases = false;
};

// The variables' last name parts: TF-slim's by default, Keras' with kKerasNames.
struct VariableNames {
  const char* weights = "weights";
  const char* biases = "biases";
  const char* depthwise = "depthwise_weights";
  // Between a layer's scope and beta/gamma/moving_*: slim's "/BatchNorm"; Keras names the
  // BatchNormalization layer itself ("conv1/bn/gamma"), so "".
  const char* batch_norm = "/BatchNorm";
};
// tf.keras (2.x, the .h5 weights' names): kernel, bias, depthwise_kernel, "<bn layer>/gamma".
inline constexpr VariableNames kKerasNames{"kernel", "bias", "depthwise_kernel", ""};

// Per-call overrides, chained: LayerArgs().stride(2).valid().
struct LayerArgs {
  int stride_override = 0;                  // 0: defaults.stride
  std::optional<Padding> padding_override;  // unset: defaults.padding
  bool relu_after = true;  // false: BatchNorm without activation (ResNet's conv3, projections)
  std::optional<Activation> activation_override;  // unset: arg_scope.activation
  std::optional<ParamInit> init_override;         // unset: arg_scope.init

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
  LayerArgs& activation(Activation a) {
    activation_override = a;
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
  ArgScope arg_scope;
  VariableNames names;

  // TF-slim's depth(): max(int(d * depth_multiplier), min_depth).
  int64_t depth(int64_t d) const;
  // depth_multiplier as the double TF-slim multiplies by (see the constructor).
  double multiplier() const { return depth_multiplier_; }

  // slim.conv2d under the arg_scope: conv (no bias) + BatchNorm (+ activation: ReLU fused,
  // or arg_scope.activation). Parameters "<scope>/<name>/weights" [kh,kw,Ci,Co],
  // "<scope>/<name>/BatchNorm/beta"...
  ValueId conv(ValueId x, int64_t filters, Kernel kernel, const std::string& name,
               const LayerArgs& args = {});
  // slim.separable_conv2d(num_outputs=None, depth_multiplier=1) under the arg_scope: a
  // depthwise conv + BatchNorm (+ activation as conv()). Parameters
  // "<scope>/<name>/depthwise_weights" [kh,kw,C,1], "<scope>/<name>/BatchNorm/beta"...
  ValueId depthwise(ValueId x, Kernel kernel, const std::string& name, const LayerArgs& args = {});

  // The steps on their own, for networks that name each one (Keras: "stem_conv", "stem_bn").
  // A conv alone: "<scope>/<name>/<names.weights>" (+ "<names.biases>" with `bias`).
  ValueId conv2d(ValueId x, int64_t filters, Kernel kernel, const std::string& name,
                 const LayerArgs& args = {}, bool bias = false);
  // A depthwise conv alone: "<scope>/<name>/<names.depthwise>" [kh,kw,C,1].
  ValueId depthwise_conv2d(ValueId x, Kernel kernel, const std::string& name,
                           const LayerArgs& args = {});
  // BatchNorm "<scope>/<name><names.batch_norm>/beta" (+gamma), then the activation that
  // args/arg_scope give (none with no_relu()).
  ValueId batch_norm(ValueId x, const std::string& name, const LayerArgs& args = {});
  ValueId activation(ValueId x, Activation function, const std::string& name);
  ValueId relu(ValueId x, const std::string& name);
  ValueId add(ValueId a, ValueId b, const std::string& name);
  ValueId zero_pad(ValueId x, Pads pads, const std::string& name);
  ValueId reshape(ValueId x, Shape shape, const std::string& name);
  ValueId scale_channels(ValueId x, ValueId s, const std::string& name);
  ValueId drop_connect(ValueId x, float keep_prob, const std::string& name);
  // slim.conv2d with normalizer_fn=None, activation_fn=None: conv + biases (logit layers).
  ValueId conv_logits(ValueId x, int64_t filters, Kernel kernel, const std::string& name,
                      ParamInit init, const LayerArgs& args = {});
  ValueId max_pool(ValueId x, int kernel, const std::string& name, const LayerArgs& args = {});
  ValueId avg_pool(ValueId x, Kernel kernel, const std::string& name, const LayerArgs& args = {});
  ValueId concat(const std::vector<ValueId>& xs, const std::string& name);
  ValueId dropout(ValueId x, const std::string& name);
  // "<scope>/<name>/<names.weights>" [K,units] and "<names.biases>".
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
  ParamInit init(const LayerArgs& args) const {
    return args.init_override.value_or(arg_scope.init.value_or(kVarianceScaling));
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

// The MobileNet v2 / EfficientNet channel rounding (slim's mobilenet _make_divisible, Keras'
// round_filters): the multiple of `divisor` nearest v, at least min_value, and not more than
// 10% under v.
int64_t make_divisible(double v, int divisor, int64_t min_value);

// A side after a TensorFlow SAME window op.
int64_t same_side(int64_t in, int stride);

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
NetworkOutputs build_mobilenet_v1(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options);
NetworkOutputs build_mobilenet_v2(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options);
NetworkOutputs build_densenet121(GraphBuilder& builder, ValueId images,
                                 const ModelOptions& options);
NetworkOutputs build_squeezenet1_0(GraphBuilder& builder, ValueId images,
                                   const ModelOptions& options);
NetworkOutputs build_squeezenet1_1(GraphBuilder& builder, ValueId images,
                                   const ModelOptions& options);
NetworkOutputs build_efficientnet_b0(GraphBuilder& builder, ValueId images,
                                     const ModelOptions& options);

// Whether one image side (height or width) fits the network; the model files know their
// grid reductions.
bool inception_v3_side_fits(int64_t side, bool aux_logits);
bool inception_v4_side_fits(int64_t side);
bool resnet50_side_fits(int64_t side);
bool mobilenet_v1_side_fits(int64_t side);
bool densenet121_side_fits(int64_t side);
bool squeezenet_side_fits(int64_t side, bool version_1_1);

}  // namespace ic::models
