// Inception v4 (Szegedy et al., "Inception-v4, Inception-ResNet and the Impact of Residual
// Connections on Learning", arXiv:1602.07261) as the Cloud TPU application's
// inception_v4_model.py builds it (TF-slim layers and names). Shape comments are for a
// 299 x 299 input at depth_multiplier 1. The block functions mirror slim's
// block_inception_a/b/c and block_reduction_a/b.
#include <algorithm>
#include <string>

#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic::models {
namespace {

// slim.fully_connected's default initialiser (the arg_scope only sets the conv one).
constexpr ParamInit kXavier{ParamInit::Kind::glorot_uniform, 0.f};

// Inception-A (paper figure 4): 35 x 35 x 384 -> 35 x 35 x 384.
ValueId block_inception_a(SlimLayers& slim, ValueId net, const std::string& block) {
  const std::string s = block + "/";
  ValueId b0 = slim.conv(net, slim.depth(96), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
  ValueId b1 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
  b1 = slim.conv(b1, slim.depth(96), {3, 3}, s + "Branch_1/Conv2d_0b_3x3");
  ValueId b2 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_2/Conv2d_0a_1x1");
  b2 = slim.conv(b2, slim.depth(96), {3, 3}, s + "Branch_2/Conv2d_0b_3x3");
  b2 = slim.conv(b2, slim.depth(96), {3, 3}, s + "Branch_2/Conv2d_0c_3x3");
  ValueId b3 = slim.avg_pool(net, {3, 3}, s + "Branch_3/AvgPool_0a_3x3");
  b3 = slim.conv(b3, slim.depth(96), {1, 1}, s + "Branch_3/Conv2d_0b_1x1");
  return slim.endpoint(block, slim.concat({b0, b1, b2, b3}, s + "concat"));
}

// Reduction-A (paper figure 7, k=192 l=224 m=256 n=384): 35 x 35 x 384 -> 17 x 17 x 1024.
ValueId block_reduction_a(SlimLayers& slim, ValueId net, const std::string& block) {
  const std::string s = block + "/";
  const LayerArgs reduce = LayerArgs().stride(2).valid();
  ValueId b0 = slim.conv(net, slim.depth(384), {3, 3}, s + "Branch_0/Conv2d_1a_3x3", reduce);
  ValueId b1 = slim.conv(net, slim.depth(192), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
  b1 = slim.conv(b1, slim.depth(224), {3, 3}, s + "Branch_1/Conv2d_0b_3x3");
  b1 = slim.conv(b1, slim.depth(256), {3, 3}, s + "Branch_1/Conv2d_1a_3x3", reduce);
  ValueId b2 = slim.max_pool(net, 3, s + "Branch_2/MaxPool_1a_3x3", reduce);
  return slim.endpoint(block, slim.concat({b0, b1, b2}, s + "concat"));
}

// Inception-B (paper figure 5): 17 x 17 x 1024 -> 17 x 17 x 1024.
ValueId block_inception_b(SlimLayers& slim, ValueId net, const std::string& block) {
  const std::string s = block + "/";
  ValueId b0 = slim.conv(net, slim.depth(384), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
  ValueId b1 = slim.conv(net, slim.depth(192), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
  b1 = slim.conv(b1, slim.depth(224), {1, 7}, s + "Branch_1/Conv2d_0b_1x7");
  b1 = slim.conv(b1, slim.depth(256), {7, 1}, s + "Branch_1/Conv2d_0c_7x1");
  ValueId b2 = slim.conv(net, slim.depth(192), {1, 1}, s + "Branch_2/Conv2d_0a_1x1");
  b2 = slim.conv(b2, slim.depth(192), {7, 1}, s + "Branch_2/Conv2d_0b_7x1");
  b2 = slim.conv(b2, slim.depth(224), {1, 7}, s + "Branch_2/Conv2d_0c_1x7");
  b2 = slim.conv(b2, slim.depth(224), {7, 1}, s + "Branch_2/Conv2d_0d_7x1");
  b2 = slim.conv(b2, slim.depth(256), {1, 7}, s + "Branch_2/Conv2d_0e_1x7");
  ValueId b3 = slim.avg_pool(net, {3, 3}, s + "Branch_3/AvgPool_0a_3x3");
  b3 = slim.conv(b3, slim.depth(128), {1, 1}, s + "Branch_3/Conv2d_0b_1x1");
  return slim.endpoint(block, slim.concat({b0, b1, b2, b3}, s + "concat"));
}

// Reduction-B (paper figure 8): 17 x 17 x 1024 -> 8 x 8 x 1536.
ValueId block_reduction_b(SlimLayers& slim, ValueId net, const std::string& block) {
  const std::string s = block + "/";
  const LayerArgs reduce = LayerArgs().stride(2).valid();
  ValueId b0 = slim.conv(net, slim.depth(192), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
  b0 = slim.conv(b0, slim.depth(192), {3, 3}, s + "Branch_0/Conv2d_1a_3x3", reduce);
  ValueId b1 = slim.conv(net, slim.depth(256), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
  b1 = slim.conv(b1, slim.depth(256), {1, 7}, s + "Branch_1/Conv2d_0b_1x7");
  b1 = slim.conv(b1, slim.depth(320), {7, 1}, s + "Branch_1/Conv2d_0c_7x1");
  b1 = slim.conv(b1, slim.depth(320), {3, 3}, s + "Branch_1/Conv2d_1a_3x3", reduce);
  ValueId b2 = slim.max_pool(net, 3, s + "Branch_2/MaxPool_1a_3x3", reduce);
  return slim.endpoint(block, slim.concat({b0, b1, b2}, s + "concat"));
}

// Inception-C (paper figure 6): 8 x 8 x 1536 -> 8 x 8 x 1536.
ValueId block_inception_c(SlimLayers& slim, ValueId net, const std::string& block) {
  const std::string s = block + "/";
  ValueId b0 = slim.conv(net, slim.depth(256), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
  ValueId b1 = slim.conv(net, slim.depth(384), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
  b1 = slim.concat({slim.conv(b1, slim.depth(256), {1, 3}, s + "Branch_1/Conv2d_0b_1x3"),
                    slim.conv(b1, slim.depth(256), {3, 1}, s + "Branch_1/Conv2d_0c_3x1")},
                   s + "Branch_1/concat");
  ValueId b2 = slim.conv(net, slim.depth(384), {1, 1}, s + "Branch_2/Conv2d_0a_1x1");
  b2 = slim.conv(b2, slim.depth(448), {3, 1}, s + "Branch_2/Conv2d_0b_3x1");
  b2 = slim.conv(b2, slim.depth(512), {1, 3}, s + "Branch_2/Conv2d_0c_1x3");
  b2 = slim.concat({slim.conv(b2, slim.depth(256), {1, 3}, s + "Branch_2/Conv2d_0d_1x3"),
                    slim.conv(b2, slim.depth(256), {3, 1}, s + "Branch_2/Conv2d_0e_3x1")},
                   s + "Branch_2/concat");
  ValueId b3 = slim.avg_pool(net, {3, 3}, s + "Branch_3/AvgPool_0a_3x3");
  b3 = slim.conv(b3, slim.depth(256), {1, 1}, s + "Branch_3/Conv2d_0b_1x1");
  return slim.endpoint(block, slim.concat({b0, b1, b2, b3}, s + "concat"));
}

// inception_v4_base: stem (paper figure 3) and the blocks, up to Mixed_7d; also returns
// Mixed_6h, where the auxiliary head starts.
struct InceptionV4Base {
  ValueId mixed_6h = kNone, mixed_7d = kNone;
};
InceptionV4Base inception_v4_base(SlimLayers& slim, ValueId images) {
  const LayerArgs reduce = LayerArgs().stride(2).valid();
  const LayerArgs valid = LayerArgs().valid();
  slim.defaults = {1, Padding::same};
  InceptionV4Base base;
  ValueId net = images;
  // 299 x 299 x 3
  net = slim.endpoint("Conv2d_1a_3x3",
                      slim.conv(net, slim.depth(32), {3, 3}, "Conv2d_1a_3x3", reduce));
  // 149 x 149 x 32
  net = slim.endpoint("Conv2d_2a_3x3",
                      slim.conv(net, slim.depth(32), {3, 3}, "Conv2d_2a_3x3", valid));
  // 147 x 147 x 32
  net = slim.endpoint("Conv2d_2b_3x3", slim.conv(net, slim.depth(64), {3, 3}, "Conv2d_2b_3x3"));
  // 147 x 147 x 64
  {
    ValueId b0 = slim.max_pool(net, 3, "Mixed_3a/Branch_0/MaxPool_0a_3x3", reduce);
    ValueId b1 = slim.conv(net, slim.depth(96), {3, 3}, "Mixed_3a/Branch_1/Conv2d_0a_3x3", reduce);
    net = slim.endpoint("Mixed_3a", slim.concat({b0, b1}, "Mixed_3a/concat"));
  }
  // 73 x 73 x 160
  {
    const std::string s = "Mixed_4a/";
    ValueId b0 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
    b0 = slim.conv(b0, slim.depth(96), {3, 3}, s + "Branch_0/Conv2d_1a_3x3", valid);
    ValueId b1 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
    b1 = slim.conv(b1, slim.depth(64), {1, 7}, s + "Branch_1/Conv2d_0b_1x7");
    b1 = slim.conv(b1, slim.depth(64), {7, 1}, s + "Branch_1/Conv2d_0c_7x1");
    b1 = slim.conv(b1, slim.depth(96), {3, 3}, s + "Branch_1/Conv2d_1a_3x3", valid);
    net = slim.endpoint("Mixed_4a", slim.concat({b0, b1}, s + "concat"));
  }
  // 71 x 71 x 192
  {
    ValueId b0 = slim.conv(net, slim.depth(192), {3, 3}, "Mixed_5a/Branch_0/Conv2d_1a_3x3", reduce);
    ValueId b1 = slim.max_pool(net, 3, "Mixed_5a/Branch_1/MaxPool_1a_3x3", reduce);
    net = slim.endpoint("Mixed_5a", slim.concat({b0, b1}, "Mixed_5a/concat"));
  }
  // 35 x 35 x 384: 4 x Inception-A
  for (const char* block : {"Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_5e"})
    net = block_inception_a(slim, net, block);
  // 35 x 35 x 384
  net = block_reduction_a(slim, net, "Mixed_6a");
  // 17 x 17 x 1024: 7 x Inception-B
  for (const char* block :
       {"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e", "Mixed_6f", "Mixed_6g", "Mixed_6h"})
    net = block_inception_b(slim, net, block);
  base.mixed_6h = net;
  // 17 x 17 x 1024
  net = block_reduction_b(slim, net, "Mixed_7a");
  // 8 x 8 x 1536: 3 x Inception-C
  for (const char* block : {"Mixed_7b", "Mixed_7c", "Mixed_7d"})
    net = block_inception_c(slim, net, block);
  // 8 x 8 x 1536
  base.mixed_7d = net;
  return base;
}

}  // namespace

bool inception_v4_side_fits(int64_t side) {
  // The heads adapt to any grid (the aux conv and the final pool take the whole map).
  return inception_grid(side).s8 >= 1;
}

NetworkOutputs build_inception_v4(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options) {
  SlimLayers slim(builder, options, "InceptionV4", /*batch_norm_gamma=*/false);
  const InceptionV4Base base = inception_v4_base(slim, images);
  NetworkOutputs out;
  slim.defaults = {1, Padding::same};

  if (options.aux_logits) {
    // 17 x 17 x 1024. The 5x5 window shrinks for grids under 5 x 5 (TF would fail there).
    const Shape s17 = slim.shape(base.mixed_6h);
    const Kernel pool{reduced_kernel(s17.h(), 5), reduced_kernel(s17.w(), 5)};
    ValueId aux = slim.avg_pool(base.mixed_6h, pool, "AuxLogits/AvgPool_1a_5x5",
                                LayerArgs().stride(3).valid());
    // 5 x 5 x 1024
    aux = slim.conv(aux, slim.depth(128), {1, 1}, "AuxLogits/Conv2d_1b_1x1");
    // 5 x 5 x 128: the kernel covers the whole map.
    const Kernel whole{static_cast<int>(slim.shape(aux).h()),
                       static_cast<int>(slim.shape(aux).w())};
    aux = slim.conv(aux, slim.depth(768), whole, "AuxLogits/Conv2d_2a", LayerArgs().valid());
    // 1 x 1 x 768
    aux = slim.flatten(aux, "AuxLogits/Flatten");
    aux = slim.dense(aux, options.num_classes, kXavier, "AuxLogits/Aux_logits");
    out.aux_logits = slim.endpoint("AuxLogits", aux);
  }

  // 8 x 8 x 1536: average over the whole map.
  const Shape s8 = slim.shape(base.mixed_7d);
  ValueId net = slim.avg_pool(base.mixed_7d, {static_cast<int>(s8.h()), static_cast<int>(s8.w())},
                              "Logits/AvgPool_1a", LayerArgs().valid());
  slim.endpoint("global_pool", net);
  // 1 x 1 x 1536
  net = slim.dropout(net, "Logits/Dropout_1b");
  net = slim.endpoint("PreLogitsFlatten", slim.flatten(net, "Logits/PreLogitsFlatten"));
  // 1536
  out.logits =
      slim.endpoint("Logits", slim.dense(net, options.num_classes, kXavier, "Logits/Logits"));
  return out;
}

}  // namespace ic::models

namespace ic {

// inception_v4.py of the Cloud TPU application.
const ModelSpec& inception_v4_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s;
    s.name = "inception_v4";
    s.about = "trains and evaluates Inception v4 (inception_v4_model.py, 1001 classes, 299x299)";
    s.network.name = s.name;
    s.network.batch_norm_decay = 0.995f;
    s.recipe.learning_rate = 0.15;
    s.recipe.train_batch_size = 256;
    s.recipe.train_steps = 80000;
    s.recipe.lr_schedule = LrScheduleKind::inception_v4;
    s.recipe.learning_rate_decay_epochs = 2;
    s.recipe.use_learning_rate_warmup = true;  // v4 always warms up
    s.recipe.cold_epochs = 1;
    s.recipe.warmup_epochs = 2;
    s.flag_defaults = {{"use_annotated_bbox", "true"}};
    s.build = models::build_inception_v4;
    s.side_fits = [](const ModelOptions&, int64_t side) {
      return models::inception_v4_side_fits(side);
    };
    return s;
  }();
  return spec;
}

}  // namespace ic
