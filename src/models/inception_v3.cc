// Inception v3 (Szegedy et al., "Rethinking the Inception Architecture for Computer Vision",
// arXiv:1512.00567) as TF-slim's contrib nets/inception_v3.py builds it: same layers, scope
// names (quirks included: they are checkpoint keys), end points and initialisers. Shape
// comments are for a 299 x 299 input at depth_multiplier 1.
#include <algorithm>
#include <string>

#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic::models {
namespace {

constexpr ParamInit kTruncatedNormal001{ParamInit::Kind::truncated_normal, 0.01f};
constexpr ParamInit kTruncatedNormal0001{ParamInit::Kind::truncated_normal, 0.001f};

// AuxLogits' pooled side: AvgPool_1a_5x5, stride 3, VALID. TF-slim keeps the 5x5 window even
// for small inputs (and fails below 17x17 = 5); we reduce it like the convolution after it.
int64_t aux_pooled_side(int64_t s17) { return valid_side(s17, reduced_kernel(s17, 5), 3); }

// Mixed_5b/5d: 35 x 35 blocks (paper figure 5, 5x5 as one conv). `pool_features` is the
// Branch_3 projection (32 in 5b, 64 in 5d).
ValueId mixed_35x35(SlimLayers& slim, ValueId net, const std::string& block,
                    int64_t pool_features) {
  const std::string s = block + "/";
  ValueId b0 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
  ValueId b1 = slim.conv(net, slim.depth(48), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
  b1 = slim.conv(b1, slim.depth(64), {5, 5}, s + "Branch_1/Conv2d_0b_5x5");
  ValueId b2 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_2/Conv2d_0a_1x1");
  b2 = slim.conv(b2, slim.depth(96), {3, 3}, s + "Branch_2/Conv2d_0b_3x3");
  b2 = slim.conv(b2, slim.depth(96), {3, 3}, s + "Branch_2/Conv2d_0c_3x3");
  ValueId b3 = slim.avg_pool(net, {3, 3}, s + "Branch_3/AvgPool_0a_3x3");
  b3 = slim.conv(b3, slim.depth(pool_features), {1, 1}, s + "Branch_3/Conv2d_0b_1x1");
  return slim.endpoint(block, slim.concat({b0, b1, b2, b3}, s + "concat"));
}

// Mixed_6b..6e: 17 x 17 blocks with factorised 7x7 convolutions (paper figure 6); `c7` is
// the width of the 1x7 / 7x1 towers (128, 160, 160, 192).
ValueId mixed_17x17(SlimLayers& slim, ValueId net, const std::string& block, int64_t c7) {
  const std::string s = block + "/";
  ValueId b0 = slim.conv(net, slim.depth(192), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
  ValueId b1 = slim.conv(net, slim.depth(c7), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
  b1 = slim.conv(b1, slim.depth(c7), {1, 7}, s + "Branch_1/Conv2d_0b_1x7");
  b1 = slim.conv(b1, slim.depth(192), {7, 1}, s + "Branch_1/Conv2d_0c_7x1");
  ValueId b2 = slim.conv(net, slim.depth(c7), {1, 1}, s + "Branch_2/Conv2d_0a_1x1");
  b2 = slim.conv(b2, slim.depth(c7), {7, 1}, s + "Branch_2/Conv2d_0b_7x1");
  b2 = slim.conv(b2, slim.depth(c7), {1, 7}, s + "Branch_2/Conv2d_0c_1x7");
  b2 = slim.conv(b2, slim.depth(c7), {7, 1}, s + "Branch_2/Conv2d_0d_7x1");
  b2 = slim.conv(b2, slim.depth(192), {1, 7}, s + "Branch_2/Conv2d_0e_1x7");
  ValueId b3 = slim.avg_pool(net, {3, 3}, s + "Branch_3/AvgPool_0a_3x3");
  b3 = slim.conv(b3, slim.depth(192), {1, 1}, s + "Branch_3/Conv2d_0b_1x1");
  return slim.endpoint(block, slim.concat({b0, b1, b2, b3}, s + "concat"));
}

// Mixed_7b/7c: 8 x 8 blocks with expanded filter banks (paper figure 7). Branch_1's 3x1 conv
// is "Conv2d_0b_3x1" in 7b but "Conv2d_0c_3x1" in 7c (`branch1_3x1`), a slim quirk.
ValueId mixed_8x8(SlimLayers& slim, ValueId net, const std::string& block,
                  const std::string& branch1_3x1) {
  const std::string s = block + "/";
  ValueId b0 = slim.conv(net, slim.depth(320), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
  ValueId b1 = slim.conv(net, slim.depth(384), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
  b1 = slim.concat({slim.conv(b1, slim.depth(384), {1, 3}, s + "Branch_1/Conv2d_0b_1x3"),
                    slim.conv(b1, slim.depth(384), {3, 1}, s + "Branch_1/" + branch1_3x1)},
                   s + "Branch_1/concat");
  ValueId b2 = slim.conv(net, slim.depth(448), {1, 1}, s + "Branch_2/Conv2d_0a_1x1");
  b2 = slim.conv(b2, slim.depth(384), {3, 3}, s + "Branch_2/Conv2d_0b_3x3");
  b2 = slim.concat({slim.conv(b2, slim.depth(384), {1, 3}, s + "Branch_2/Conv2d_0c_1x3"),
                    slim.conv(b2, slim.depth(384), {3, 1}, s + "Branch_2/Conv2d_0d_3x1")},
                   s + "Branch_2/concat");
  ValueId b3 = slim.avg_pool(net, {3, 3}, s + "Branch_3/AvgPool_0a_3x3");
  b3 = slim.conv(b3, slim.depth(192), {1, 1}, s + "Branch_3/Conv2d_0b_1x1");
  return slim.endpoint(block, slim.concat({b0, b1, b2, b3}, s + "concat"));
}

// inception_v3_base: the stem and the Mixed blocks, up to Mixed_7c; also returns Mixed_6e,
// where the auxiliary head starts.
struct InceptionV3Base {
  ValueId mixed_6e = kNone, mixed_7c = kNone;
};
InceptionV3Base inception_v3_base(SlimLayers& slim, ValueId images) {
  InceptionV3Base base;
  const LayerArgs reduce = LayerArgs().stride(2).valid();  // the grid reductions
  ValueId net = images;
  // The stem: stride 1, VALID unless a layer says otherwise.
  slim.defaults = {1, Padding::valid};
  // 299 x 299 x 3
  net = slim.conv(net, slim.depth(32), {3, 3}, "Conv2d_1a_3x3", LayerArgs().stride(2));
  slim.endpoint("Conv2d_1a_3x3", net);
  // 149 x 149 x 32
  net = slim.conv(net, slim.depth(32), {3, 3}, "Conv2d_2a_3x3");
  slim.endpoint("Conv2d_2a_3x3", net);
  // 147 x 147 x 32
  net = slim.conv(net, slim.depth(64), {3, 3}, "Conv2d_2b_3x3", LayerArgs().same());
  slim.endpoint("Conv2d_2b_3x3", net);
  // 147 x 147 x 64
  net = slim.max_pool(net, 3, "MaxPool_3a_3x3", LayerArgs().stride(2));
  slim.endpoint("MaxPool_3a_3x3", net);
  // 73 x 73 x 64
  net = slim.conv(net, slim.depth(80), {1, 1}, "Conv2d_3b_1x1");
  slim.endpoint("Conv2d_3b_1x1", net);
  // 73 x 73 x 80
  net = slim.conv(net, slim.depth(192), {3, 3}, "Conv2d_4a_3x3");
  slim.endpoint("Conv2d_4a_3x3", net);
  // 71 x 71 x 192
  net = slim.max_pool(net, 3, "MaxPool_5a_3x3", LayerArgs().stride(2));
  slim.endpoint("MaxPool_5a_3x3", net);

  // The Inception blocks: stride 1, SAME unless a layer says otherwise.
  slim.defaults = {1, Padding::same};
  // 35 x 35 x 192
  net = mixed_35x35(slim, net, "Mixed_5b", 32);
  // 35 x 35 x 256: Mixed_5c is 5b with pool projection 64, but its Branch_1 scopes are
  // "Conv2d_0b_1x1" and "Conv_1_0c_5x5" (a slim quirk kept for checkpoint names).
  {
    const std::string s = "Mixed_5c/";
    ValueId b0 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
    ValueId b1 = slim.conv(net, slim.depth(48), {1, 1}, s + "Branch_1/Conv2d_0b_1x1");
    b1 = slim.conv(b1, slim.depth(64), {5, 5}, s + "Branch_1/Conv_1_0c_5x5");
    ValueId b2 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_2/Conv2d_0a_1x1");
    b2 = slim.conv(b2, slim.depth(96), {3, 3}, s + "Branch_2/Conv2d_0b_3x3");
    b2 = slim.conv(b2, slim.depth(96), {3, 3}, s + "Branch_2/Conv2d_0c_3x3");
    ValueId b3 = slim.avg_pool(net, {3, 3}, s + "Branch_3/AvgPool_0a_3x3");
    b3 = slim.conv(b3, slim.depth(64), {1, 1}, s + "Branch_3/Conv2d_0b_1x1");
    net = slim.endpoint("Mixed_5c", slim.concat({b0, b1, b2, b3}, s + "concat"));
  }
  // 35 x 35 x 288
  net = mixed_35x35(slim, net, "Mixed_5d", 64);
  // 35 x 35 x 288: grid reduction (paper figure 10). Branch_0's 3x3 stride-2 conv and
  // Branch_1's last conv are both scoped "Conv2d_1a_1x1" (slim quirk).
  {
    const std::string s = "Mixed_6a/";
    ValueId b0 = slim.conv(net, slim.depth(384), {3, 3}, s + "Branch_0/Conv2d_1a_1x1", reduce);
    ValueId b1 = slim.conv(net, slim.depth(64), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
    b1 = slim.conv(b1, slim.depth(96), {3, 3}, s + "Branch_1/Conv2d_0b_3x3");
    b1 = slim.conv(b1, slim.depth(96), {3, 3}, s + "Branch_1/Conv2d_1a_1x1", reduce);
    ValueId b2 = slim.max_pool(net, 3, s + "Branch_2/MaxPool_1a_3x3", reduce);
    net = slim.endpoint("Mixed_6a", slim.concat({b0, b1, b2}, s + "concat"));
  }
  // 17 x 17 x 768
  net = mixed_17x17(slim, net, "Mixed_6b", 128);
  net = mixed_17x17(slim, net, "Mixed_6c", 160);
  net = mixed_17x17(slim, net, "Mixed_6d", 160);
  net = base.mixed_6e = mixed_17x17(slim, net, "Mixed_6e", 192);
  // 17 x 17 x 768: grid reduction.
  {
    const std::string s = "Mixed_7a/";
    ValueId b0 = slim.conv(net, slim.depth(192), {1, 1}, s + "Branch_0/Conv2d_0a_1x1");
    b0 = slim.conv(b0, slim.depth(320), {3, 3}, s + "Branch_0/Conv2d_1a_3x3", reduce);
    ValueId b1 = slim.conv(net, slim.depth(192), {1, 1}, s + "Branch_1/Conv2d_0a_1x1");
    b1 = slim.conv(b1, slim.depth(192), {1, 7}, s + "Branch_1/Conv2d_0b_1x7");
    b1 = slim.conv(b1, slim.depth(192), {7, 1}, s + "Branch_1/Conv2d_0c_7x1");
    b1 = slim.conv(b1, slim.depth(192), {3, 3}, s + "Branch_1/Conv2d_1a_3x3", reduce);
    ValueId b2 = slim.max_pool(net, 3, s + "Branch_2/MaxPool_1a_3x3", reduce);
    net = slim.endpoint("Mixed_7a", slim.concat({b0, b1, b2}, s + "concat"));
  }
  // 8 x 8 x 1280
  net = mixed_8x8(slim, net, "Mixed_7b", "Conv2d_0b_3x1");
  // 8 x 8 x 2048
  net = mixed_8x8(slim, net, "Mixed_7c", "Conv2d_0c_3x1");
  // 8 x 8 x 2048
  base.mixed_7c = net;
  return base;
}

}  // namespace

bool inception_v3_side_fits(int64_t side, bool aux_logits) {
  const InceptionGrid g = inception_grid(side);
  if (g.s8 < 1) return false;
  // AvgPool_1a_8x8 has TF-slim's default stride 2: a side above 9 leaves more than one
  // pooled position and the SpatialSqueeze of the logits fails in TF-slim too.
  if (valid_side(g.s8, reduced_kernel(g.s8, 8), 2) != 1) return false;
  // AuxLogits' Conv2d_2a (5x5 or less, VALID) must end at 1 x 1 as well.
  if (aux_logits) {
    const int64_t pooled = aux_pooled_side(g.s17);
    if (pooled < 1 || pooled > 5) return false;
  }
  return true;
}

NetworkOutputs build_inception_v3(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options) {
  SlimLayers slim(builder, options, "InceptionV3", /*batch_norm_gamma=*/false);
  const InceptionV3Base base = inception_v3_base(slim, images);
  ValueId net = base.mixed_7c;
  NetworkOutputs out;

  // Auxiliary head on Mixed_6e (stride 1, SAME unless said otherwise).
  slim.defaults = {1, Padding::same};
  if (options.aux_logits) {
    const ValueId mixed_6e = base.mixed_6e;
    const Shape s17 = slim.shape(mixed_6e);
    // 17 x 17 x 768
    const Kernel pool{reduced_kernel(s17.h(), 5), reduced_kernel(s17.w(), 5)};
    ValueId aux =
        slim.avg_pool(mixed_6e, pool, "AuxLogits/AvgPool_1a_5x5", LayerArgs().stride(3).valid());
    // 5 x 5 x 768
    aux = slim.conv(aux, slim.depth(128), {1, 1}, "AuxLogits/Conv2d_1b_1x1");
    // 5 x 5 x 128
    const Kernel k{reduced_kernel(slim.shape(aux).h(), 5), reduced_kernel(slim.shape(aux).w(), 5)};
    aux = slim.conv(aux, slim.depth(768), k, "AuxLogits/" + kernel_name("Conv2d_2a", k),
                    LayerArgs().valid().init(kTruncatedNormal001));
    // 1 x 1 x 768
    aux = slim.conv_logits(aux, options.num_classes, {1, 1}, "AuxLogits/Conv2d_2b_1x1",
                           kTruncatedNormal0001);
    // 1 x 1 x num_classes
    aux = slim.flatten(aux, "AuxLogits/SpatialSqueeze");
    out.aux_logits = slim.endpoint("AuxLogits", aux);
  }

  // Final pooling and prediction.
  // 8 x 8 x 2048
  const Kernel pool{reduced_kernel(slim.shape(net).h(), 8), reduced_kernel(slim.shape(net).w(), 8)};
  net = slim.avg_pool(net, pool, "Logits/" + kernel_name("AvgPool_1a", pool),
                      LayerArgs().stride(2).valid());  // slim avg_pool2d default stride 2
  // 1 x 1 x 2048
  net = slim.dropout(net, "Logits/Dropout_1b");
  slim.endpoint("PreLogits", net);
  net =
      slim.conv_logits(net, options.num_classes, {1, 1}, "Logits/Conv2d_1c_1x1", kVarianceScaling);
  // 1 x 1 x num_classes
  out.logits = slim.endpoint("Logits", slim.flatten(net, "Logits/SpatialSqueeze"));
  return out;
}

}  // namespace ic::models

namespace ic {

// inception_v3.py of the Cloud TPU application: its flags' defaults are the DEFINE defaults.
const ModelSpec& inception_v3_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s;
    s.name = "inception_v3";
    s.about = "trains and evaluates Inception v3 (TF-slim's inception_v3, 1001 classes, 299x299)";
    s.network.name = s.name;  // ModelOptions' defaults are Inception v3's
    s.build = models::build_inception_v3;
    s.side_fits = [](const ModelOptions& o, int64_t side) {
      return models::inception_v3_side_fits(side, o.aux_logits);
    };
    return s;
  }();
  return spec;
}

}  // namespace ic
