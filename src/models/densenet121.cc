// DenseNet-121 (Huang et al., "Densely Connected Convolutional Networks", arXiv:1608.06993) as
// tf.keras.applications.DenseNet121, with tf.keras 2's layer names (those of its .h5 weights;
// Keras 3 spells "conv1/conv" and "conv1/bn" as "conv1_conv" and "conv1_bn") under the scope
// "densenet121" and Keras' variable names:
//   densenet121/conv1/conv/kernel [7,7,3,64], densenet121/conv1/bn/{gamma,beta,moving_*}
//   densenet121/conv<b>_block<i>_{0_bn,1_conv,1_bn,2_conv}/...   dense blocks b = 2..5
//   densenet121/pool<b>_{bn,conv}/...                            transitions b = 2..4
//   densenet121/bn/..., densenet121/predictions/{kernel [1024,1000], bias}
// Layers: ZeroPadding2D(3) + 7x7/2 VALID conv, BN, ReLU, ZeroPadding2D(1) + 3x3/2 VALID max
// pool; dense blocks of 6, 12, 24, 16 layers (BN, ReLU, 1x1 conv to 4 x 32, BN, ReLU, 3x3 SAME
// conv to 32, concatenated onto the input); between blocks BN, ReLU, 1x1 conv to half the
// width, 2x2/2 average pool; then BN, ReLU, global average pool, dense. Convolutions have no
// bias; BatchNorm has gamma and beta, epsilon 1.001e-5 and Keras' momentum 0.99. Kernels start
// as Keras' default glorot_uniform. The ReLUs are fused into the BatchNorms. With a
// depth_multiplier the growth rate and the stem become depth(32) and depth(64).
// End points are Keras layer names: conv1/relu, pool1, then each block's last concat and each
// transition's pool, relu, avg_pool, predictions. Shape comments are for 224 x 224.
#include <string>

#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic::models {
namespace {

constexpr int kDenseBlockLayers[] = {6, 12, 24, 16};

// dense_conv_block(): BN-ReLU-1x1 conv (4 x growth) - BN-ReLU-3x3 conv (growth), concatenated.
ValueId dense_conv_block(SlimLayers& slim, ValueId x, const std::string& name, int64_t growth) {
  ValueId x1 = slim.batch_norm(x, name + "_0_bn");
  x1 = slim.conv2d(x1, 4 * growth, {1, 1}, name + "_1_conv");
  x1 = slim.batch_norm(x1, name + "_1_bn");
  x1 = slim.conv2d(x1, growth, {3, 3}, name + "_2_conv");
  return slim.concat({x, x1}, name + "_concat");
}

// dense_transition(): BN-ReLU-1x1 conv to int(C * 0.5), 2x2/2 average pool.
ValueId dense_transition(SlimLayers& slim, ValueId x, const std::string& name) {
  x = slim.batch_norm(x, name + "_bn");
  x = slim.conv2d(x, slim.shape(x).c() / 2, {1, 1}, name + "_conv");
  return slim.avg_pool(x, {2, 2}, name + "_pool", LayerArgs().stride(2).valid());
}

}  // namespace

bool densenet121_side_fits(int64_t side) {
  int64_t s = valid_side(side + 6, 7, 2);                // conv1/conv after ZeroPadding2D(3)
  s = valid_side(s + 2, 3, 2);                           // pool1 after ZeroPadding2D(1)
  for (int b = 2; b <= 4; ++b) s = valid_side(s, 2, 2);  // pool2..pool4
  return s >= 1;
}

NetworkOutputs build_densenet121(GraphBuilder& builder, ValueId images,
                                 const ModelOptions& options) {
  SlimLayers slim(builder, options, "densenet121", /*batch_norm_gamma=*/true);
  slim.names = kKerasNames;
  slim.arg_scope.init = ParamInit{ParamInit::Kind::glorot_uniform, 0.f};
  const int64_t growth = slim.depth(32);
  ValueId net = images;
  // 224 x 224 x 3
  net = slim.zero_pad(net, {3, 3, 3, 3}, "zero_padding2d");
  net = slim.conv2d(net, slim.depth(64), {7, 7}, "conv1/conv", LayerArgs().stride(2).valid());
  net = slim.endpoint("conv1/relu", slim.batch_norm(net, "conv1/bn"));
  // 112 x 112 x 64
  net = slim.zero_pad(net, {1, 1, 1, 1}, "zero_padding2d_1");
  net = slim.endpoint("pool1", slim.max_pool(net, 3, "pool1", LayerArgs().stride(2).valid()));
  // 56 x 56 x 64 -> conv2: 56 x 56 x 256 -> pool2: 28 x 28 x 128 -> conv3: 28 x 28 x 512 ->
  // pool3: 14 x 14 x 256 -> conv4: 14 x 14 x 1024 -> pool4: 7 x 7 x 512 -> conv5: 7 x 7 x 1024
  for (int b = 2; b <= 5; ++b) {
    const std::string block = "conv" + std::to_string(b);
    const int layers = kDenseBlockLayers[b - 2];
    for (int i = 1; i <= layers; ++i)
      net = dense_conv_block(slim, net, block + "_block" + std::to_string(i), growth);
    slim.endpoint(block + "_block" + std::to_string(layers) + "_concat", net);
    if (b < 5) {
      const std::string pool = "pool" + std::to_string(b);
      net = slim.endpoint(pool + "_pool", dense_transition(slim, net, pool));
    }
  }
  net = slim.endpoint("relu", slim.batch_norm(net, "bn"));
  // 7 x 7 x 1024
  net = slim.endpoint("avg_pool", slim.global_avg_pool(net, "avg_pool"));
  // 1024
  NetworkOutputs out;
  out.logits = slim.endpoint(
      "predictions", slim.dense(net, options.num_classes,
                                ParamInit{ParamInit::Kind::glorot_uniform, 0.f}, "predictions"));
  return out;
}

}  // namespace ic::models

namespace ic {

// The Cloud TPU application models/official/densenet/densenet_imagenet.py (its constants and
// flags) for the recipe; Keras DenseNet121's batch norm and 1000 classes (docs/models.md).
const ModelSpec& densenet121_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s;
    s.name = "densenet121";
    s.about = "trains and evaluates DenseNet-121 (Keras' DenseNet121, 1000 classes, 224x224)";
    s.network.name = s.name;
    s.network.height = s.network.width = 224;
    s.network.num_classes = 1000;
    s.network.aux_logits = false;
    s.network.batch_norm_decay = 0.99f;  // Keras BatchNormalization(momentum=0.99)
    s.network.batch_norm_epsilon = 1.001e-5f;
    s.network.label_smoothing = 0.f;  // densenet_imagenet.py: plain softmax_cross_entropy
    s.recipe.optimizer = "momentum";  // MomentumOptimizer(momentum=0.9), not Nesterov
    s.recipe.nesterov = false;
    s.recipe.learning_rate = 0.1;  // _BASE_LR, scaled by train_batch_size / 256
    s.recipe.train_batch_size = 1024;
    s.recipe.train_steps = 130000;
    s.recipe.lr_schedule = LrScheduleKind::densenet;
    s.recipe.weight_decay = 1e-4;               // _WEIGHT_DECAY
    s.recipe.moving_average = false;            // no EMA in densenet_imagenet.py
    s.flag_defaults = {{"iterations", "1000"},  // steps_per_checkpoint
                       {"train_steps_per_eval", "1000"},
                       {"preprocessing", "vgg"}};
    s.build = models::build_densenet121;
    s.side_fits = [](const ModelOptions&, int64_t side) {
      return models::densenet121_side_fits(side);
    };
    return s;
  }();
  return spec;
}

}  // namespace ic
