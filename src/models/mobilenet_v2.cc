// MobileNet v2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks",
// arXiv:1801.04381) as TF-slim's nets/mobilenet/mobilenet_v2.py (V2_DEF) built by
// nets/mobilenet/mobilenet.py under its training_scope():
//   MobilenetV2/Conv/weights [3,3,3,32] + BatchNorm (gamma, beta)
//   MobilenetV2/expanded_conv/{depthwise,project}/...          (no expansion: factor 1)
//   MobilenetV2/expanded_conv_<k>/{expand,depthwise,project}/... k = 1..16
//     expand 1x1 to 6x the input width, depthwise 3x3 (depthwise_weights [3,3,C,1]),
//     project 1x1 without activation; + the input where stride 1 and the widths match
//   MobilenetV2/Conv_1/weights [1,1,320,1280] + BatchNorm
//   MobilenetV2/Logits/Conv2d_1c_1x1/{weights [1,1,1280,1001], biases}
// Every BatchNorm is followed by ReLU6 except the projections'. Widths are slim's
// depth_multiplier(): _make_divisible(d * multiplier, 8, min_depth 8), and an expansion is
// _make_divisible(input width * 6, 8). mobilenet_v2.mobilenet() leaves
// finegrain_classification_mode False, so Conv_1's 1280 shrinks with a multiplier < 1 as every
// other layer (the mobilenet_v2_050/_035 wrappers set it True and keep 1280; we follow the
// default). Kernels start as truncated normal with stddev 0.09 (training_scope's). Shape
// comments are for 224 x 224.
#include <string>

#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic::models {
namespace {

// V2_DEF's expanded_conv ops after the first: output width and stride.
struct V2Block {
  int64_t outputs;
  int stride;
};
constexpr V2Block kV2Blocks[] = {{24, 2},  {24, 1},  {32, 2},  {32, 1}, {32, 1}, {64, 2},
                                 {64, 1},  {64, 1},  {64, 1},  {96, 1}, {96, 1}, {96, 1},
                                 {160, 2}, {160, 1}, {160, 1}, {320, 1}};

// slim's depth_multiplier(): _make_divisible(d * multiplier, divisible_by 8, min_depth).
int64_t v2_depth(const SlimLayers& slim, const ModelOptions& options, int64_t d) {
  return make_divisible(static_cast<double>(d) * slim.multiplier(), 8, options.min_depth);
}

// ops.expanded_conv: [expand 1x1 ->] depthwise 3x3 -> project 1x1 (linear) [+ input].
ValueId expanded_conv(SlimLayers& slim, ValueId x, const std::string& scope, int64_t outputs,
                      int stride, int64_t expansion_size) {
  const std::string s = scope + "/";
  const int64_t in = slim.shape(x).c();
  ValueId net = x;
  if (expansion_size > in) net = slim.conv(net, expansion_size, {1, 1}, s + "expand");
  net = slim.depthwise(net, {3, 3}, s + "depthwise", LayerArgs().stride(stride));
  net = slim.conv(net, outputs, {1, 1}, s + "project", LayerArgs().no_relu());
  if (stride == 1 && outputs == in) net = slim.add(net, x, s + "add");
  return net;
}

}  // namespace

NetworkOutputs build_mobilenet_v2(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options) {
  SlimLayers slim(builder, options, "MobilenetV2", /*batch_norm_gamma=*/true);
  const ParamInit init{ParamInit::Kind::truncated_normal, 0.09f};
  slim.defaults = {1, Padding::same};
  slim.arg_scope = {Activation::relu6, init};
  auto depth = [&](int64_t d) { return v2_depth(slim, options, d); };
  ValueId net = images;
  // 224 x 224 x 3
  net = slim.endpoint("layer_1", slim.conv(net, depth(32), {3, 3}, "Conv", LayerArgs().stride(2)));
  // 112 x 112 x 32: expand_input(1, divisible_by=1) is the input width, so no expansion
  net = slim.endpoint("layer_2",
                      expanded_conv(slim, net, "expanded_conv", depth(16), 1, slim.shape(net).c()));
  // 112 x 112 x 16 -> 56 (k = 1) -> 28 (3) -> 14 (6) -> 14 (10) -> 7 (13) -> 7 x 7 x 320 (16)
  for (int k = 1; k <= 16; ++k) {
    const V2Block& b = kV2Blocks[k - 1];
    const int64_t expansion = make_divisible(static_cast<double>(slim.shape(net).c()) * 6, 8, 8);
    net = slim.endpoint("layer_" + std::to_string(k + 2),
                        expanded_conv(slim, net, "expanded_conv_" + std::to_string(k),
                                      depth(b.outputs), b.stride, expansion));
  }
  net = slim.endpoint("layer_19", slim.conv(net, depth(1280), {1, 1}, "Conv_1"));
  // 7 x 7 x 1280; mobilenet.global_pool: an average pool over the whole map
  const Shape& s = slim.shape(net);
  const Kernel whole{static_cast<int>(s.h()), static_cast<int>(s.w())};
  net = slim.endpoint("global_pool",
                      slim.avg_pool(net, whole, "Logits/AvgPool", LayerArgs().stride(1).valid()));
  // 1 x 1 x 1280
  net = slim.dropout(net, "Logits/Dropout");
  net = slim.conv_logits(net, options.num_classes, {1, 1}, "Logits/Conv2d_1c_1x1", init);
  NetworkOutputs out;
  out.logits = slim.endpoint("Logits", slim.flatten(net, "Logits/Squeeze"));
  return out;
}

}  // namespace ic::models

namespace ic {

// TF-slim's MobileNet v2 definition and training_scope() for the network; the recipe is the
// Cloud TPU MobileNet application's (models/official/mobilenet, the only MobileNet trainer in
// tensorflow/tpu), as for mobilenet_v1 (docs/models.md).
const ModelSpec& mobilenet_v2_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s;
    s.name = "mobilenet_v2";
    s.about = "trains and evaluates MobileNet v2 (TF-slim's mobilenet_v2, 1001 classes, 224x224)";
    s.network.name = s.name;
    s.network.height = s.network.width = 224;
    s.network.num_classes = 1001;
    s.network.min_depth = 8;  // mobilenet.depth_multiplier(min_depth=8)
    s.network.aux_logits = false;
    s.network.dropout_keep_prob = 0.8f;   // training_scope(dropout_keep_prob=0.8)
    s.network.batch_norm_decay = 0.997f;  // training_scope(bn_decay=0.997)
    s.network.batch_norm_epsilon = 0.001f;
    s.network.label_smoothing = 0.1f;
    s.recipe.optimizer = "RMS";
    s.recipe.learning_rate = 0.165;
    s.recipe.train_batch_size = 1024;
    s.recipe.train_steps = 8000000;
    s.recipe.lr_schedule = LrScheduleKind::mobilenet;
    s.recipe.learning_rate_decay_epochs = 3;
    s.recipe.use_learning_rate_warmup = false;
    s.recipe.weight_decay = 4e-5;  // training_scope(weight_decay=0.00004)
    s.recipe.moving_average = true;
    s.build = models::build_mobilenet_v2;
    // SAME throughout and a global pool: any side runs; below 32 the five stride-2 steps have
    // nothing to reduce.
    s.side_fits = [](const ModelOptions&, int64_t side) { return side >= 32; };
    return s;
  }();
  return spec;
}

}  // namespace ic
