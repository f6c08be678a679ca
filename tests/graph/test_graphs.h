// Small graphs shared by the graph tests: every op kind, a value read by several nodes,
// reshape aliases, two losses.
#pragma once

#include "graph/graph.h"

namespace ic::testing {

struct SmallGraphOptions {
  bool training = true;
  int64_t batch = 2, size = 6, classes = 5;
  bool dead_branch = false;  // a conv whose output nothing reads (its weights get zero grads)
  bool with_dropout = true;
  bool aux_loss = true;  // a dense head on the pooled features with its own loss
  float bn_decay = 0.996f;
};

// images[N,S,S,3] -> conv3x3(4) -> BN -> Relu = x1 (explicit Relu: the fusion pass folds it)
//   a = BN+relu(conv1x1(3)(maxpool3x3 s1 SAME(x1)))
//   b = BN+relu(conv1x1(2)(avgpool3x3 s1 SAME(x1)))      (fused via BatchNormOptions::relu)
//   m = concat(a, b, x1)                                  (x1 read three times)
//   g = global_avg_pool(m) [N,9]
//   logits = reshape(conv1x1+bias(dropout(reshape(g,[N,1,1,9]))), [N,K]);  loss = xent(logits)
//   aux = dense(g, K);  aux loss = 0.4 * xent(aux)                (g read twice)
inline Graph small_graph(const SmallGraphOptions& o) {
  GraphBuilder b(o.training);
  const ValueId images = b.images(Shape{o.batch, o.size, o.size, 3});
  const ValueId labels = b.labels(o.batch);
  GraphBuilder::ConvOptions c3;
  c3.filters = 4;
  c3.kernel_h = c3.kernel_w = 3;
  ValueId x = b.conv2d(images, c3, "Net/Conv2d_1a_3x3");
  GraphBuilder::BatchNormOptions bn;
  bn.decay = o.bn_decay;
  x = b.batch_norm(x, bn, "Net/Conv2d_1a_3x3");
  const ValueId x1 = b.relu(x, "Net/Conv2d_1a_3x3/Relu");
  b.endpoint("Conv2d_1a_3x3", x1);

  GraphBuilder::BatchNormOptions bn_relu = bn;
  bn_relu.relu = true;
  GraphBuilder::ConvOptions c1;
  c1.filters = 3;
  ValueId a = b.max_pool(x1, 3, 1, Padding::same, "Net/Mixed/Branch_0/MaxPool");
  a = b.batch_norm(b.conv2d(a, c1, "Net/Mixed/Branch_0/Conv2d_0a_1x1"), bn_relu,
                   "Net/Mixed/Branch_0/Conv2d_0a_1x1");
  c1.filters = 2;
  ValueId p = b.avg_pool(x1, 3, 3, 1, Padding::same, "Net/Mixed/Branch_1/AvgPool");
  p = b.batch_norm(b.conv2d(p, c1, "Net/Mixed/Branch_1/Conv2d_0b_1x1"), bn_relu,
                   "Net/Mixed/Branch_1/Conv2d_0b_1x1");
  if (o.dead_branch) {
    c1.filters = 2;
    b.conv2d(x1, c1, "Net/Dead/Conv2d_0a_1x1");
  }
  const ValueId m = b.concat({a, p, x1}, "Net/Mixed");
  b.endpoint("Mixed", m);
  const ValueId g = b.global_avg_pool(m, "Net/Logits/AvgPool");
  const int64_t channels = b.shape(g)[1];
  ValueId h = b.reshape(g, Shape{o.batch, 1, 1, channels}, "Net/Logits/Expand");
  if (o.with_dropout) h = b.dropout(h, 0.8f, "Net/Logits/Dropout");
  GraphBuilder::ConvOptions head;
  head.filters = o.classes;
  head.bias = true;
  head.init = ParamInit{ParamInit::Kind::truncated_normal, 0.1f};
  h = b.conv2d(h, head, "Net/Logits/Conv2d_1c_1x1");
  const ValueId logits = b.reshape(h, Shape{o.batch, o.classes}, "Net/Logits/Squeeze");
  b.set_logits(logits);
  b.endpoint("Logits", logits);
  b.softmax_cross_entropy(logits, labels, 0.1f, 1.f, "Net/Loss");
  if (o.aux_loss) {
    const ValueId aux =
        b.dense(g, o.classes, ParamInit{ParamInit::Kind::truncated_normal, 0.1f}, "Net/Aux");
    b.softmax_cross_entropy(aux, labels, 0.f, 0.4f, "Net/AuxLoss");
  }
  return b.finish();
}

}  // namespace ic::testing
