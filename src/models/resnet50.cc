// ResNet-50 v1.5 (He et al., "Deep Residual Learning for Image Recognition", arXiv:1512.03385,
// with the stride-2 on the 3x3 convolution of the bottleneck, as torchvision and the TF
// official ResNet), under TF-slim resnet_v1_50's scope names:
//   resnet_v1_50/conv1/weights [7,7,3,64], resnet_v1_50/conv1/BatchNorm/{gamma,beta,...}
//   resnet_v1_50/block1/unit_1/bottleneck_v1/{shortcut,conv1,conv2,conv3}/...
//   resnet_v1_50/logits/{weights [2048,1000], biases}
// Differences from torchvision, which do not change any parameter shape:
//   - padding is TensorFlow SAME (for stride 2 it pads 2 before / 3 after a 7x7 conv on 224,
//     torchvision pads 3 / 3); the output sizes are the same;
//   - weights start as TF-slim's (variance scaling, fan_in, truncated normal), the logits as a
//     dense layer with that initialiser (slim builds them as a 1x1 conv with it).
// BatchNorm has gamma and beta; its decay and epsilon are ModelOptions' (the resnet50 defaults
// of default_model_options() are torchvision's 0.9 / 1e-5). Shape comments are for 224 x 224.
#include <string>

#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic::models {
namespace {

// torchvision's Bottleneck: 1x1 width -> 3x3 width (stride) -> 1x1 4*width, plus the input or
// a projection of it (1x1 conv + BN, stride) when the shape changes; ReLU after the sum.
ValueId bottleneck(SlimLayers& slim, ValueId x, const std::string& unit, int64_t width,
                   int64_t out_channels, int stride, bool project) {
  const std::string s = unit + "/bottleneck_v1/";
  ValueId shortcut = x;
  if (project)
    shortcut =
        slim.conv(x, out_channels, {1, 1}, s + "shortcut", LayerArgs().stride(stride).no_relu());
  ValueId net = slim.conv(x, width, {1, 1}, s + "conv1");
  net = slim.conv(net, width, {3, 3}, s + "conv2", LayerArgs().stride(stride));
  net = slim.conv(net, out_channels, {1, 1}, s + "conv3", LayerArgs().no_relu());
  return slim.endpoint(unit, slim.add_relu(shortcut, net, s + "add"));
}

// One stage ("block1".."block4" = torchvision's layer1..layer4): `units` bottlenecks, the
// first one with the stride and the projection shortcut.
ValueId stage(SlimLayers& slim, ValueId x, const std::string& block, int units, int64_t width,
              int stride) {
  for (int u = 1; u <= units; ++u) {
    const bool first = u == 1;
    x = bottleneck(slim, x, block + "/unit_" + std::to_string(u), slim.depth(width),
                   slim.depth(4 * width), first ? stride : 1, first);
  }
  return x;
}

}  // namespace

bool resnet50_side_fits(int64_t side) {
  // SAME padding runs on any size; below 32 the five stride-2 steps have nothing to reduce.
  return side >= 32;
}

NetworkOutputs build_resnet50(GraphBuilder& builder, ValueId images, const ModelOptions& options) {
  SlimLayers slim(builder, options, "resnet_v1_50", /*batch_norm_gamma=*/true);
  slim.defaults = {1, Padding::same};
  ValueId net = images;
  // 224 x 224 x 3
  net = slim.endpoint("conv1",
                      slim.conv(net, slim.depth(64), {7, 7}, "conv1", LayerArgs().stride(2)));
  // 112 x 112 x 64
  net = slim.endpoint("pool1", slim.max_pool(net, 3, "pool1", LayerArgs().stride(2)));
  // 56 x 56 x 64
  net = stage(slim, net, "block1", 3, 64, 1);
  // 56 x 56 x 256
  net = stage(slim, net, "block2", 4, 128, 2);
  // 28 x 28 x 512
  net = stage(slim, net, "block3", 6, 256, 2);
  // 14 x 14 x 1024
  net = stage(slim, net, "block4", 3, 512, 2);
  // 7 x 7 x 2048
  net = slim.endpoint("global_pool", slim.global_avg_pool(net, "pool5"));
  // 2048
  NetworkOutputs out;
  out.logits =
      slim.endpoint("logits", slim.dense(net, options.num_classes, kVarianceScaling, "logits"));
  return out;
}

}  // namespace ic::models

namespace ic {

// resnet_main.py and configs/resnet_config.py of the Cloud TPU application, with torchvision's
// batch norm (momentum 0.1, epsilon 1e-5) and 1000 classes.
const ModelSpec& resnet50_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s;
    s.name = "resnet50";
    s.about = "trains and evaluates ResNet-50 v1.5 (TF-slim names, 1000 classes, 224x224)";
    s.network.name = s.name;
    s.network.height = s.network.width = 224;
    s.network.num_classes = 1000;
    s.network.aux_logits = false;
    s.network.batch_norm_decay = 0.9f;  // torchvision momentum 0.1
    s.network.batch_norm_epsilon = 1e-5f;
    s.network.label_smoothing = 0.f;
    s.recipe.optimizer = "momentum";
    s.recipe.nesterov = true;  // MomentumOptimizer(use_nesterov=True)
    s.recipe.learning_rate = 0.1;
    s.recipe.train_batch_size = 1024;
    s.recipe.train_steps = 112590;
    s.recipe.lr_schedule = LrScheduleKind::resnet50;
    s.recipe.weight_decay = 1e-4;
    s.recipe.moving_average = false;  // resnet_main.py keeps no EMA
    s.flag_defaults = {
        {"iterations", "1251"}, {"train_steps_per_eval", "1251"}, {"precision", "bfloat16"}};
    s.build = models::build_resnet50;
    s.side_fits = [](const ModelOptions&, int64_t side) {
      return models::resnet50_side_fits(side);
    };
    return s;
  }();
  return spec;
}

}  // namespace ic
