// SqueezeNet 1.0 and 1.1 (Iandola et al., "SqueezeNet: AlexNet-level accuracy with 50x fewer
// parameters and <0.5MB model size", arXiv:1602.07360; 1.1 from the authors' repository) as
// torchvision's models/squeezenet.py. Parameters are named after torchvision's module paths
// under the model's scope, so that each maps 1:1 to a state_dict key:
//   squeezenet1_0/features.0/weights [7,7,3,96]        <-> features.0.weight [96,3,7,7]
//   squeezenet1_0/features.3/squeeze/biases [16]        <-> features.3.squeeze.bias
//   squeezenet1_0/features.3/expand3x3/weights [3,3,16,64] <-> features.3.expand3x3.weight
//   squeezenet1_0/classifier.1/{weights [1,1,512,1000], biases} <-> classifier.1.{weight,bias}
// ("<scope>/<path>/weights" is "<path>.weight" transposed from OIHW to HWIO; "biases" is
// "<path>.bias"). Every conv has a bias and a ReLU, and there is no BatchNorm. A Fire module
// squeezes with a 1x1 conv, then concatenates a 1x1 and a 3x3 (padding 1, TensorFlow's SAME
// at stride 1) expansion. The head is dropout 0.5, the 1x1 conv to the classes, ReLU and a
// global average pool.
// torchvision's max pools are 3x3/2 with ceil_mode=True: on an odd side that is VALID, on an
// even side it is TensorFlow SAME (one padded row or column after, which a max ignores). Each
// pool picks from its input's sides; where height and width differ in parity, the even one is
// padded with a zero row or column after and the pool is VALID (the input is a ReLU's, >= 0,
// so the zero never wins over a real value). End points are the torchvision module paths of
// the outputs: features.1 (the stem's ReLU), features.2 ... features.12, classifier.2 (the
// final ReLU) and classifier.3 (the pooled logits). Kernels start with the variance of
// torchvision's kaiming_uniform_ (variance scaling, fan_in), classifier.1 as N(0, 0.01)
// (truncated at 2 stddev here); biases zero. Shape comments are for 224 x 224 (1.0 / 1.1).
#include <string>

#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic::models {
namespace {

// A ceil_mode 3x3/2 max pool's output side; 0 when the window does not fit (our limit: the
// first window must lie inside the input).
int64_t ceil_pool_side(int64_t in) { return in >= 3 ? (in - 3 + 1) / 2 + 1 : 0; }

// The module layout: which features.<k> are max pools, the stem, and each Fire's widths.
// features.1 is the stem's ReLU; the other indices up to 12 that are not pools are the Fires,
// in order.
struct SqueezeFire {
  int64_t squeeze, expand;
};
struct SqueezeLayout {
  int stem_filters, stem_kernel;
  int pools[3];          // features.<k>
  SqueezeFire fires[8];  // 1.0: features.3, 4, 5, 7, 8, 9, 10, 12; 1.1: 3, 4, 6, 7, 9, 10, 11, 12
};
constexpr SqueezeLayout kSqueeze10{
    96,
    7,
    {2, 6, 11},
    {{16, 64}, {16, 64}, {32, 128}, {32, 128}, {48, 192}, {48, 192}, {64, 256}, {64, 256}}};
constexpr SqueezeLayout kSqueeze11{
    64,
    3,
    {2, 5, 8},
    {{16, 64}, {16, 64}, {32, 128}, {32, 128}, {48, 192}, {48, 192}, {64, 256}, {64, 256}}};

// conv (bias) + ReLU, torchvision's Conv2d followed by ReLU(inplace=True).
ValueId squeeze_conv_relu(SlimLayers& slim, ValueId x, int64_t filters, Kernel kernel,
                          const std::string& name, const LayerArgs& args = {}) {
  return slim.relu(slim.conv2d(x, filters, kernel, name, args, /*bias=*/true), name + "/relu");
}

ValueId fire(SlimLayers& slim, ValueId x, const std::string& name, int64_t squeeze,
             int64_t expand) {
  const std::string s = name + "/";
  const ValueId squeezed = squeeze_conv_relu(slim, x, slim.depth(squeeze), {1, 1}, s + "squeeze");
  const ValueId e1 = squeeze_conv_relu(slim, squeezed, slim.depth(expand), {1, 1}, s + "expand1x1");
  const ValueId e3 = squeeze_conv_relu(slim, squeezed, slim.depth(expand), {3, 3}, s + "expand3x3");
  return slim.concat({e1, e3}, s + "cat");
}

// MaxPool2d(3, 2, ceil_mode=True), see the file comment.
ValueId ceil_max_pool(SlimLayers& slim, ValueId x, const std::string& name) {
  const Shape& s = slim.shape(x);
  const bool odd_h = s.h() % 2 == 1, odd_w = s.w() % 2 == 1;
  if (odd_h && odd_w) return slim.max_pool(x, 3, name, LayerArgs().stride(2).valid());
  if (!odd_h && !odd_w) return slim.max_pool(x, 3, name, LayerArgs().stride(2).same());
  const ValueId padded =
      slim.zero_pad(x, {0, odd_h ? 0 : 1, 0, odd_w ? 0 : 1}, name + "/ceil_mode_pad");
  return slim.max_pool(padded, 3, name, LayerArgs().stride(2).valid());
}

NetworkOutputs build_squeezenet(GraphBuilder& builder, ValueId images, const ModelOptions& options,
                                const SqueezeLayout& layout, const std::string& scope) {
  SlimLayers slim(builder, options, scope, /*batch_norm_gamma=*/false);
  slim.defaults = {1, Padding::same};
  ValueId net = images;
  // 224 x 224 x 3
  net = squeeze_conv_relu(slim, net, slim.depth(layout.stem_filters),
                          {layout.stem_kernel, layout.stem_kernel}, "features.0",
                          LayerArgs().stride(2).valid());
  slim.endpoint("features.1", net);
  // 109 x 109 x 96 / 111 x 111 x 64
  int fire_at = 0;
  for (int k = 2; k <= 12; ++k) {
    const std::string name = "features." + std::to_string(k);
    const bool pool = k == layout.pools[0] || k == layout.pools[1] || k == layout.pools[2];
    if (pool) {
      net = ceil_max_pool(slim, net, name);
    } else {
      const SqueezeFire& f = layout.fires[fire_at++];
      net = fire(slim, net, name, f.squeeze, f.expand);
    }
    slim.endpoint(name, net);
  }
  // 13 x 13 x 512 (pools: 109 -> 54 -> 27 -> 13 / 111 -> 55 -> 27 -> 13)
  net = slim.dropout(net, "classifier.0");
  net = slim.relu(slim.conv2d(net, options.num_classes, {1, 1}, "classifier.1",
                              LayerArgs().init(ParamInit{ParamInit::Kind::truncated_normal, 0.01f}),
                              /*bias=*/true),
                  "classifier.2");
  slim.endpoint("classifier.2", net);
  // 13 x 13 x 1000; AdaptiveAvgPool2d((1, 1)) and flatten
  NetworkOutputs out;
  out.logits = slim.endpoint("classifier.3", slim.global_avg_pool(net, "classifier.3"));
  return out;
}

}  // namespace

bool squeezenet_side_fits(int64_t side, bool version_1_1) {
  const SqueezeLayout& layout = version_1_1 ? kSqueeze11 : kSqueeze10;
  int64_t s = valid_side(side, layout.stem_kernel, 2);  // features.0
  for (int i = 0; i < 3; ++i) s = ceil_pool_side(s);    // the three pools; Fires keep the side
  return s >= 1;
}

NetworkOutputs build_squeezenet1_0(GraphBuilder& builder, ValueId images,
                                   const ModelOptions& options) {
  return build_squeezenet(builder, images, options, kSqueeze10, "squeezenet1_0");
}

NetworkOutputs build_squeezenet1_1(GraphBuilder& builder, ValueId images,
                                   const ModelOptions& options) {
  return build_squeezenet(builder, images, options, kSqueeze11, "squeezenet1_1");
}

}  // namespace ic::models

namespace ic {
namespace {

// The Cloud TPU application models/official/squeezenet (squeezenet_main.py,
// squeezenet_model.py, configs/squeezenet_config.py) for the recipe; torchvision's network,
// 1000 classes (docs/models.md).
ModelSpec squeezenet_spec(const char* name, const char* about,
                          models::NetworkOutputs (*build)(GraphBuilder&, ValueId,
                                                          const ModelOptions&),
                          bool version_1_1) {
  ModelSpec s;
  s.name = name;
  s.about = about;
  s.network.name = s.name;
  s.network.height = s.network.width = 224;
  s.network.num_classes = 1000;
  s.network.aux_logits = false;
  s.network.dropout_keep_prob = 0.5f;  // torchvision's Dropout(p=0.5)
  s.network.label_smoothing = 0.f;     // sparse_softmax_cross_entropy
  s.recipe.optimizer = "momentum";     // MomentumOptimizer(0.9, use_nesterov=True)
  s.recipe.nesterov = true;
  // init_learning_rate 0.03 at the config's batch of 1024 (0.0075 per 256 images).
  s.recipe.learning_rate = 0.0075;
  s.recipe.train_batch_size = 1024;
  s.recipe.train_steps = 190429;  // num_epochs 150 * num_examples_per_epoch 1.3M // 1024
  s.recipe.lr_schedule = LrScheduleKind::squeezenet;
  // squeezenet_model.py declares an l2_regularizer(0.0002) on the kernels but its loss is the
  // cross-entropy alone (the regularisation losses are never added): no weight decay.
  s.recipe.weight_decay = 0;
  s.recipe.moving_average = false;
  s.flag_defaults = {{"train_steps_per_eval", "19042"},  // total_steps // num_evals 10
                     {"preprocessing", "vgg"}};          // data_pipeline.py: VGG-style crops
  s.build = build;
  if (version_1_1) {
    s.side_fits = [](const ModelOptions&, int64_t side) {
      return models::squeezenet_side_fits(side, true);
    };
  } else {
    s.side_fits = [](const ModelOptions&, int64_t side) {
      return models::squeezenet_side_fits(side, false);
    };
  }
  return s;
}

}  // namespace

const ModelSpec& squeezenet1_0_spec() {
  static const ModelSpec spec = squeezenet_spec(
      "squeezenet1_0", "trains and evaluates SqueezeNet 1.0 (torchvision's, 1000 classes, 224x224)",
      models::build_squeezenet1_0, false);
  return spec;
}

const ModelSpec& squeezenet1_1_spec() {
  static const ModelSpec spec = squeezenet_spec(
      "squeezenet1_1", "trains and evaluates SqueezeNet 1.1 (torchvision's, 1000 classes, 224x224)",
      models::build_squeezenet1_1, true);
  return spec;
}

}  // namespace ic
