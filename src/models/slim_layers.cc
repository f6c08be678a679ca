#include "models/slim_layers.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ic::models {

SlimLayers::SlimLayers(GraphBuilder& builder, const ModelOptions& options, std::string scope,
                       bool batch_norm_gamma)
    : builder_(builder),
      options_(options),
      scope_(std::move(scope)),
      batch_norm_gamma_(batch_norm_gamma),
      // The flag value is a decimal typed by a user; TF-slim multiplies by the Python double
      // of that decimal. Rounding the float back to 6 decimals recovers that double, so
      // int(d * 0.3) truncates as it does in Python (0.3f alone is slightly above 0.3).
      depth_multiplier_(std::round(static_cast<double>(options.depth_multiplier) * 1e6) / 1e6) {}

int64_t SlimLayers::depth(int64_t d) const {
  const auto scaled = static_cast<int64_t>(static_cast<double>(d) * depth_multiplier_);
  return std::max<int64_t>(scaled, options_.min_depth);
}

ValueId SlimLayers::conv(ValueId x, int64_t filters, Kernel kernel, const std::string& name,
                         const LayerArgs& args) {
  return batch_norm(conv2d(x, filters, kernel, name, args), name, args);
}

ValueId SlimLayers::depthwise(ValueId x, Kernel kernel, const std::string& name,
                              const LayerArgs& args) {
  return batch_norm(depthwise_conv2d(x, kernel, name, args), name, args);
}

ValueId SlimLayers::conv2d(ValueId x, int64_t filters, Kernel kernel, const std::string& name,
                           const LayerArgs& args, bool bias) {
  GraphBuilder::ConvOptions conv;
  conv.filters = filters;
  conv.kernel_h = kernel.h;
  conv.kernel_w = kernel.w;
  conv.stride = stride(args);
  conv.padding = padding(args);
  conv.bias = bias;
  conv.init = init(args);
  conv.compute = options_.compute;
  conv.weights_name = names.weights;
  conv.biases_name = names.biases;
  conv.decay_bias = arg_scope.decay_biases;
  return builder_.conv2d(x, conv, full(name));
}

ValueId SlimLayers::depthwise_conv2d(ValueId x, Kernel kernel, const std::string& name,
                                     const LayerArgs& args) {
  GraphBuilder::DepthwiseOptions dw;
  dw.kernel_h = kernel.h;
  dw.kernel_w = kernel.w;
  dw.stride = stride(args);
  dw.padding = padding(args);
  dw.init = init(args);
  dw.weights_name = names.depthwise;
  return builder_.depthwise_conv2d(x, dw, full(name));
}

ValueId SlimLayers::batch_norm(ValueId x, const std::string& name, const LayerArgs& args) {
  GraphBuilder::BatchNormOptions bn;
  bn.decay = options_.batch_norm_decay;
  bn.epsilon = options_.batch_norm_epsilon;
  bn.gamma = batch_norm_gamma_;
  bn.suffix = names.batch_norm;
  // The activation: none, ReLU (fused into the BatchNorm) or another one after it.
  const std::optional<Activation> other =
      args.activation_override ? args.activation_override : arg_scope.activation;
  bn.relu = args.relu_after && !other.has_value();
  const ValueId y = builder_.batch_norm(x, bn, full(name));
  if (!args.relu_after || !other.has_value()) return y;
  const Activation f = other.value();
  return builder_.activation(y, f, full(name) + "/" + activation_name(f));
}

ValueId SlimLayers::activation(ValueId x, Activation function, const std::string& name) {
  return builder_.activation(x, function, full(name));
}

ValueId SlimLayers::relu(ValueId x, const std::string& name) {
  return builder_.relu(x, full(name));
}

ValueId SlimLayers::add(ValueId a, ValueId b, const std::string& name) {
  return builder_.add(a, b, /*relu=*/false, full(name));
}

ValueId SlimLayers::zero_pad(ValueId x, Pads pads, const std::string& name) {
  return builder_.zero_pad(x, pads, full(name));
}

ValueId SlimLayers::reshape(ValueId x, Shape shape, const std::string& name) {
  return builder_.reshape(x, std::move(shape), full(name));
}

ValueId SlimLayers::scale_channels(ValueId x, ValueId s, const std::string& name) {
  return builder_.scale_channels(x, s, full(name));
}

ValueId SlimLayers::drop_connect(ValueId x, float keep_prob, const std::string& name) {
  return builder_.drop_connect(x, keep_prob, full(name));
}

ValueId SlimLayers::conv_logits(ValueId x, int64_t filters, Kernel kernel, const std::string& name,
                                ParamInit init, const LayerArgs& args) {
  GraphBuilder::ConvOptions conv;
  conv.filters = filters;
  conv.kernel_h = kernel.h;
  conv.kernel_w = kernel.w;
  conv.stride = stride(args);
  conv.padding = padding(args);
  conv.bias = true;
  conv.init = init;
  conv.compute = options_.compute;
  conv.weights_name = names.weights;
  conv.biases_name = names.biases;
  conv.decay_bias = arg_scope.decay_biases;
  return builder_.conv2d(x, conv, full(name));
}

ValueId SlimLayers::max_pool(ValueId x, int kernel, const std::string& name,
                             const LayerArgs& args) {
  return builder_.max_pool(x, kernel, stride(args), padding(args), full(name));
}

ValueId SlimLayers::avg_pool(ValueId x, Kernel kernel, const std::string& name,
                             const LayerArgs& args) {
  return builder_.avg_pool(x, kernel.h, kernel.w, stride(args), padding(args), full(name));
}

ValueId SlimLayers::concat(const std::vector<ValueId>& xs, const std::string& name) {
  return builder_.concat(xs, full(name));
}

ValueId SlimLayers::dropout(ValueId x, const std::string& name) {
  return builder_.dropout(x, options_.dropout_keep_prob, full(name));
}

ValueId SlimLayers::dense(ValueId x, int64_t units, ParamInit init, const std::string& name) {
  return builder_.dense(x, units, init, full(name), names.weights, names.biases,
                        arg_scope.decay_biases);
}

ValueId SlimLayers::flatten(ValueId x, const std::string& name) {
  const Shape s = shape(x);
  return builder_.reshape(x, Shape{s.n(), s.h() * s.w() * s.c()}, full(name));
}

ValueId SlimLayers::add_relu(ValueId a, ValueId b, const std::string& name) {
  return builder_.add(a, b, /*relu=*/true, full(name));
}

ValueId SlimLayers::global_avg_pool(ValueId x, const std::string& name) {
  return builder_.global_avg_pool(x, full(name));
}

ValueId SlimLayers::endpoint(const std::string& name, ValueId x) {
  builder_.endpoint(name, x);
  return x;
}

int64_t valid_side(int64_t in, int kernel, int stride) {
  return in >= kernel ? tf_output_size(in, kernel, stride, Padding::valid) : 0;
}

InceptionGrid inception_grid(int64_t side) {
  int64_t x = valid_side(side, 3, 2);       // Conv2d_1a_3x3                  299 -> 149
  x = valid_side(x, 3, 1);                  // Conv2d_2a_3x3 (2b is SAME)     -> 147
  x = valid_side(x, 3, 2);                  // v3 MaxPool_3a_3x3, v4 Mixed_3a -> 73
  x = valid_side(x, 3, 1);                  // v3 Conv2d_4a_3x3, v4 Mixed_4a  -> 71
  x = valid_side(x, 3, 2);                  // v3 MaxPool_5a_3x3, v4 Mixed_5a -> 35
  const int64_t s17 = valid_side(x, 3, 2);  // Mixed_6a                       -> 17
  return {s17, valid_side(s17, 3, 2)};      // Mixed_7a                       -> 8
}

int reduced_kernel(int64_t side, int kernel) {
  return static_cast<int>(std::min<int64_t>(side, kernel));
}

int64_t make_divisible(double v, int divisor, int64_t min_value) {
  // Python: max(min_value, int(v + divisor / 2) // divisor * divisor), + divisor when that is
  // under 0.9 * v. v > 0, so int() and // both round down.
  const auto rounded = static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor;
  int64_t new_v = std::max(min_value, rounded);
  if (static_cast<double>(new_v) < 0.9 * v) new_v += divisor;
  return new_v;
}

int64_t same_side(int64_t in, int stride) { return tf_output_size(in, 1, stride, Padding::same); }

std::string kernel_name(const std::string& prefix, Kernel kernel) {
  return prefix + "_" + std::to_string(kernel.h) + "x" + std::to_string(kernel.w);
}

}  // namespace ic::models
