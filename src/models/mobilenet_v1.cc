// MobileNet v1 (Howard et al., "MobileNets: Efficient Convolutional Neural Networks for Mobile
// Vision Applications", arXiv:1704.04861) as TF-slim's nets/mobilenet_v1.py under
// mobilenet_v1_arg_scope(), the network the Cloud TPU MobileNet application trained before it
// switched to tf.keras.applications.MobileNet (same layers, Keras names):
//   MobilenetV1/Conv2d_0/weights [3,3,3,32], MobilenetV1/Conv2d_0/BatchNorm/{gamma,beta,...}
//   MobilenetV1/Conv2d_<i>_depthwise/depthwise_weights [3,3,C,1] + BatchNorm, i = 1..13
//   MobilenetV1/Conv2d_<i>_pointwise/weights [1,1,C,depth] + BatchNorm
//   MobilenetV1/Logits/Conv2d_1c_1x1/{weights [1,1,1024,1001], biases}
// Every conv is SAME and followed by BatchNorm (gamma and beta) and ReLU6; kernels start as
// truncated normal with stddev 0.09 (the arg_scope's), the logits' too (a slim.conv2d in the
// same arg_scope). Widths are slim's depth(): max(int(d * depth_multiplier), min_depth), with
// min_depth 8 in the registry defaults as mobilenet_v1(). Shape comments are for 224 x 224.
#include <string>

#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic::models {
namespace {

// _CONV_DEFS after Conv2d_0: the depthwise-separable layers' stride and pointwise depth.
struct V1Separable {
  int stride;
  int64_t depth;
};
constexpr V1Separable kV1Separable[] = {{1, 64},  {2, 128},  {1, 128}, {2, 256}, {1, 256},
                                        {2, 512}, {1, 512},  {1, 512}, {1, 512}, {1, 512},
                                        {1, 512}, {2, 1024}, {1, 1024}};

// The side of the final (stride 32) map.
int64_t v1_final_side(int64_t side) {
  int64_t s = same_side(side, 2);  // Conv2d_0
  for (const V1Separable& d : kV1Separable) s = same_side(s, d.stride);
  return s;
}

}  // namespace

bool mobilenet_v1_side_fits(int64_t side) {
  // SAME padding runs on any size; below 32 the five stride-2 steps have nothing to reduce.
  // Logits/AvgPool_1a is slim's fixed 7x7 window (stride 2, VALID, shrunk for small maps),
  // which reaches 1x1 only from final maps up to 8x8: sides up to 256 (beyond, TF-slim fails
  // at SpatialSqueeze).
  if (side < 32) return false;
  const int64_t s = v1_final_side(side);
  return valid_side(s, reduced_kernel(s, 7), 2) == 1;
}

NetworkOutputs build_mobilenet_v1(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options) {
  SlimLayers slim(builder, options, "MobilenetV1", /*batch_norm_gamma=*/true);
  const ParamInit init{ParamInit::Kind::truncated_normal, 0.09f};
  slim.defaults = {1, Padding::same};
  slim.arg_scope = {Activation::relu6, init};
  ValueId net = images;
  // 224 x 224 x 3
  net = slim.endpoint("Conv2d_0",
                      slim.conv(net, slim.depth(32), {3, 3}, "Conv2d_0", LayerArgs().stride(2)));
  // 112 x 112 x 32
  for (int i = 1; i <= 13; ++i) {
    const V1Separable& d = kV1Separable[i - 1];
    const std::string base = "Conv2d_" + std::to_string(i);
    net = slim.endpoint(base + "_depthwise", slim.depthwise(net, {3, 3}, base + "_depthwise",
                                                            LayerArgs().stride(d.stride)));
    net = slim.endpoint(base + "_pointwise",
                        slim.conv(net, slim.depth(d.depth), {1, 1}, base + "_pointwise"));
  }
  // 112 (Conv2d_1) -> 56 (2) -> 28 (4) -> 14 (6) -> 7 (12): 7 x 7 x 1024
  const Shape& s = slim.shape(net);
  const Kernel pool{reduced_kernel(s.h(), 7), reduced_kernel(s.w(), 7)};
  net = slim.endpoint("AvgPool_1a",
                      slim.avg_pool(net, pool, "Logits/AvgPool_1a", LayerArgs().stride(2).valid()));
  // 1 x 1 x 1024
  net = slim.dropout(net, "Logits/Dropout_1b");
  net = slim.conv_logits(net, options.num_classes, {1, 1}, "Logits/Conv2d_1c_1x1", init);
  // 1 x 1 x 1001
  NetworkOutputs out;
  out.logits = slim.endpoint("Logits", slim.flatten(net, "Logits/SpatialSqueeze"));
  return out;
}

}  // namespace ic::models

namespace ic {

// The Cloud TPU application models/official/mobilenet/mobilenet.py with its
// configs/mobilenet_config.py (MOBILENET_CFG) and slim's mobilenet_v1_arg_scope() defaults
// (docs/models.md lists each value's source).
const ModelSpec& mobilenet_v1_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s;
    s.name = "mobilenet_v1";
    s.about = "trains and evaluates MobileNet v1 (TF-slim's mobilenet_v1, 1001 classes, 224x224)";
    s.network.name = s.name;
    s.network.height = s.network.width = 224;
    s.network.num_classes = 1001;
    s.network.min_depth = 8;  // mobilenet_v1(min_depth=8)
    s.network.aux_logits = false;
    s.network.dropout_keep_prob = 0.999f;  // mobilenet_v1(dropout_keep_prob=0.999)
    s.network.batch_norm_decay = 0.9997f;  // mobilenet_v1_arg_scope()
    s.network.batch_norm_epsilon = 0.001f;
    s.network.label_smoothing = 0.1f;  // mobilenet.py's softmax_cross_entropy
    s.recipe.optimizer = "RMS";        // decay 0.9, momentum 0.9, epsilon 1.0 as mobilenet.py
    s.recipe.learning_rate = 0.165;
    s.recipe.train_batch_size = 1024;
    s.recipe.train_steps = 8000000;
    s.recipe.lr_schedule = LrScheduleKind::mobilenet;
    s.recipe.learning_rate_decay_epochs = 3;  // x0.94 (--learning_rate_decay's default)
    s.recipe.use_learning_rate_warmup = false;
    s.recipe.weight_decay = 4e-5;  // mobilenet_v1_arg_scope(weight_decay=0.00004)
    s.recipe.moving_average = true;
    // MOBILENET_CFG's iterations_per_loop 100 and train_steps_per_eval 2000 are the defaults.
    s.build = models::build_mobilenet_v1;
    s.side_fits = [](const ModelOptions&, int64_t side) {
      return models::mobilenet_v1_side_fits(side);
    };
    return s;
  }();
  return spec;
}

}  // namespace ic
