// EfficientNet-B0 (Tan & Le, "EfficientNet: Rethinking Model Scaling for Convolutional Neural
// Networks", arXiv:1905.11946) as tf.keras.applications.EfficientNetB0, with Keras' layer names
// under the scope "efficientnet_b0" and tf.keras 2's variable names (kernel, bias,
// depthwise_kernel; BatchNorm gamma, beta, moving_mean, moving_variance):
//   efficientnet_b0/stem_conv/kernel [3,3,3,32], efficientnet_b0/stem_bn/{gamma,beta,...}
//   efficientnet_b0/block<s><r>_{expand_conv,expand_bn,dwconv,bn,se_reduce,se_expand,
//                                project_conv,project_bn}/...   (block1a ... block7a)
//   efficientnet_b0/top_conv/kernel [1,1,320,1280], top_bn, predictions/{kernel,bias}
// An MBConv block: expand 1x1 (ratio 6; none in stage 1) + BN + swish, depthwise k x k + BN +
// swish, squeeze-and-excitation (global average pool, 1x1 conv with bias to
// max(1, int(0.25 * block input width)) + swish, 1x1 conv with bias back + sigmoid, times the
// map per channel), project 1x1 + BN (linear); where the stride is 1 and the widths match,
// drop-connect at rate 0.2 * (block index) / 16 and the input added. Keras pads the stride-2
// convolutions with correct_pad() then runs them VALID: that is TensorFlow SAME for both odd
// and even sides, which we use. BN epsilon 1e-3 and momentum 0.99 (Keras' defaults, as the
// Cloud TPU EfficientNet). Keras' model starts with Rescaling(1/255) and Normalization layers;
// they are left out: our input pipeline normalises the images (data/), and the Normalization's
// 7 statistics are not parameters here. With a depth_multiplier as the width coefficient,
// widths are Keras' round_filters(): make_divisible(d * multiplier, 8, min_depth 8).
// Kernels start as Keras': VarianceScaling(2, fan_out, truncated normal) for every conv (we
// give each its stddev); the dense layer's VarianceScaling(1/3, fan_out, uniform) becomes a
// truncated normal of the same variance (there is no scaled uniform initialiser here).
// End points: stem_activation, each block by name (block1a, block2a, block2b, ...),
// top_activation, avg_pool, predictions. Shape comments are for 224 x 224.
#include <algorithm>
#include <cmath>
#include <string>

#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic::models {
namespace {

// Keras DEFAULT_BLOCKS_ARGS: kernel, repeats, input and output widths, expansion, stride;
// every block has se_ratio 0.25 and id_skip.
struct MbStage {
  int kernel, repeats;
  int64_t filters_in, filters_out;
  int expand_ratio, stride;
};
constexpr MbStage kMbStages[] = {
    {3, 1, 32, 16, 1, 1},  {3, 2, 16, 24, 6, 2},   {5, 2, 24, 40, 6, 2},  {3, 3, 40, 80, 6, 2},
    {5, 3, 80, 112, 6, 1}, {5, 4, 112, 192, 6, 2}, {3, 1, 192, 320, 6, 1}};
constexpr int kMbBlocks = 16;  // the sum of the repeats (depth coefficient 1)
constexpr double kDropConnectRate = 0.2;
constexpr double kSeRatio = 0.25;

// VarianceScaling(scale 2, mode fan_out, truncated_normal): stddev sqrt(2 / fan_out) / .8796...
// (the truncated normal's own stddev correction, as Keras).
ParamInit fan_out_init(Kernel kernel, int64_t out_channels) {
  const double fan_out =
      static_cast<double>(kernel.h) * kernel.w * static_cast<double>(out_channels);
  return {ParamInit::Kind::truncated_normal,
          static_cast<float>(std::sqrt(2.0 / fan_out) / 0.87962566103423978)};
}

// BN + swish, Keras' "<x>_bn" and "<x>_activation" layers.
ValueId bn_swish(SlimLayers& slim, ValueId x, const std::string& bn, const std::string& act) {
  return slim.activation(slim.batch_norm(x, bn, LayerArgs().no_relu()), Activation::swish, act);
}

ValueId mb_conv(SlimLayers& slim, ValueId x, int64_t filters, Kernel kernel,
                const std::string& name, int stride = 1, bool bias = false) {
  return slim.conv2d(x, filters, kernel, name,
                     LayerArgs().stride(stride).init(fan_out_init(kernel, filters)), bias);
}

// Keras' block(): one MBConv with squeeze-and-excitation.
ValueId mbconv_block(SlimLayers& slim, ValueId inputs, const std::string& name, const MbStage& def,
                     int64_t filters_in, int64_t filters_out, int stride, double drop_rate) {
  const std::string n = name + "_";
  const int64_t filters = filters_in * def.expand_ratio;
  ValueId x = inputs;
  if (def.expand_ratio != 1) {
    x = mb_conv(slim, x, filters, {1, 1}, n + "expand_conv");
    x = bn_swish(slim, x, n + "expand_bn", n + "expand_activation");
  }
  const Kernel k{def.kernel, def.kernel};
  // DepthwiseConv2D's kernel [k,k,C,1]: fan_out = k * k * 1.
  x = slim.depthwise_conv2d(x, k, n + "dwconv",
                            LayerArgs().stride(stride).init(fan_out_init(k, 1)));
  x = bn_swish(slim, x, n + "bn", n + "activation");

  const int64_t filters_se =
      std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(filters_in) * kSeRatio));
  const int64_t batch = slim.shape(x).n();
  ValueId se = slim.global_avg_pool(x, n + "se_squeeze");
  se = slim.reshape(se, Shape{batch, 1, 1, filters}, n + "se_reshape");
  se = mb_conv(slim, se, filters_se, {1, 1}, n + "se_reduce", 1, /*bias=*/true);
  se = slim.activation(se, Activation::swish, n + "se_reduce/swish");
  se = mb_conv(slim, se, filters, {1, 1}, n + "se_expand", 1, /*bias=*/true);
  se = slim.activation(se, Activation::sigmoid, n + "se_expand/sigmoid");
  se = slim.reshape(se, Shape{batch, filters}, n + "se_expand/flatten");
  x = slim.scale_channels(x, se, n + "se_excite");

  x = mb_conv(slim, x, filters_out, {1, 1}, n + "project_conv");
  x = slim.batch_norm(x, n + "project_bn", LayerArgs().no_relu());
  if (stride == 1 && filters_in == filters_out) {
    if (drop_rate > 0) x = slim.drop_connect(x, static_cast<float>(1.0 - drop_rate), n + "drop");
    x = slim.add(x, inputs, n + "add");
  }
  return x;
}

}  // namespace

NetworkOutputs build_efficientnet_b0(GraphBuilder& builder, ValueId images,
                                     const ModelOptions& options) {
  SlimLayers slim(builder, options, "efficientnet_b0", /*batch_norm_gamma=*/true);
  slim.names = kKerasNames;
  slim.defaults = {1, Padding::same};
  // main.py's L2 loss: every trainable variable whose name lacks "batch_normalization".
  slim.arg_scope.decay_biases = true;
  // Keras' round_filters() for width coefficient = depth_multiplier.
  auto round_filters = [&](int64_t d) {
    return make_divisible(static_cast<double>(d) * slim.multiplier(), 8, options.min_depth);
  };
  ValueId net = images;
  // 224 x 224 x 3
  net = mb_conv(slim, net, round_filters(32), {3, 3}, "stem_conv", 2);
  net = slim.endpoint("stem_activation", bn_swish(slim, net, "stem_bn", "stem_activation"));
  // 112 x 112 x 32 -> block1a 112 x 112 x 16 -> block2b 56 x 56 x 24 -> block3b 28 x 28 x 40
  // -> block4c 14 x 14 x 80 -> block5c 14 x 14 x 112 -> block6d 7 x 7 x 192 -> block7a 7 x 7 x 320
  int b = 0;
  for (int i = 0; i < 7; ++i) {
    const MbStage& def = kMbStages[i];
    const int64_t stage_in = round_filters(def.filters_in);
    const int64_t stage_out = round_filters(def.filters_out);
    for (int j = 0; j < def.repeats; ++j) {
      const std::string name = "block" + std::to_string(i + 1) + static_cast<char>('a' + j);
      net = slim.endpoint(
          name, mbconv_block(slim, net, name, def, j == 0 ? stage_in : stage_out, stage_out,
                             j == 0 ? def.stride : 1, kDropConnectRate * b / kMbBlocks));
      ++b;
    }
  }
  net = mb_conv(slim, net, round_filters(1280), {1, 1}, "top_conv");
  net = slim.endpoint("top_activation", bn_swish(slim, net, "top_bn", "top_activation"));
  // 7 x 7 x 1280
  net = slim.endpoint("avg_pool", slim.global_avg_pool(net, "avg_pool"));
  // 1280
  net = slim.dropout(net, "top_dropout");
  // VarianceScaling(1/3, fan_out, uniform) has variance 1 / (3 * classes); a truncated normal
  // with that variance.
  const double stddev =
      std::sqrt(1.0 / (3.0 * static_cast<double>(options.num_classes))) / 0.87962566103423978;
  NetworkOutputs out;
  out.logits = slim.endpoint("predictions", slim.dense(net, options.num_classes,
                                                       ParamInit{ParamInit::Kind::truncated_normal,
                                                                 static_cast<float>(stddev)},
                                                       "predictions"));
  return out;
}

}  // namespace ic::models

namespace ic {

// The Cloud TPU application models/official/efficientnet (main.py's flags, utils.py's
// build_learning_rate and build_optimizer, efficientnet_builder.py's efficientnet-b0
// parameters) for the recipe; Keras EfficientNetB0 for the network, 1000 classes
// (docs/models.md).
const ModelSpec& efficientnet_b0_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s;
    s.name = "efficientnet_b0";
    s.about = "trains and evaluates EfficientNet-B0 (Keras' EfficientNetB0, 1000 classes, 224x224)";
    s.network.name = s.name;
    s.network.height = s.network.width = 224;
    s.network.num_classes = 1000;
    s.network.min_depth = 8;  // round_filters' divisor
    s.network.aux_logits = false;
    s.network.dropout_keep_prob = 0.8f;  // dropout_rate 0.2 for efficientnet-b0
    s.network.batch_norm_decay = 0.99f;  // batch_norm_momentum
    s.network.batch_norm_epsilon = 1e-3f;
    s.network.label_smoothing = 0.1f;  // --label_smoothing
    s.recipe.optimizer = "RMS";        // --optimizer=rmsprop: decay 0.9, momentum 0.9
    s.recipe.learning_rate = 0.016;    // --base_learning_rate, scaled by train_batch_size / 256
    s.recipe.train_batch_size = 2048;
    s.recipe.train_steps = 218949;  // 350 epochs at 2048
    s.recipe.lr_schedule = LrScheduleKind::efficientnet;
    s.recipe.use_learning_rate_warmup = true;  // always, for --lr_warmup_epochs > 0
    s.recipe.cold_epochs = 0;
    s.recipe.warmup_epochs = 5;    // --lr_warmup_epochs
    s.recipe.weight_decay = 1e-5;  // --weight_decay
    s.recipe.moving_average = true;
    s.flag_defaults = {{"learning_rate_decay", "0.97"},  // --lr_decay_factor
                       {"moving_average_decay", "0.9999"},
                       {"rmsprop_epsilon", "0.001"},      // utils.py build_optimizer
                       {"iterations", "1251"},            // --iterations_per_loop
                       {"train_steps_per_eval", "6255"},  // --steps_per_eval
                       {"eval_batch_size", "64"}};
    s.build = models::build_efficientnet_b0;
    // SAME throughout and a global pool: any side runs; below 32 the five stride-2 steps have
    // nothing to reduce.
    s.side_fits = [](const ModelOptions&, int64_t side) { return side >= 32; };
    return s;
  }();
  return spec;
}

}  // namespace ic
