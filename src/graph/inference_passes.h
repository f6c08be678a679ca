// Rewrites of an inference graph (training = false) together with the host values of its
// parameters. Unlike passes.h, these change the parameters themselves: folding a batch norm
// into the convolution before it needs the moving statistics, so each pass takes and returns
// the graph with its values. Value ids are kept, as in passes.h (a value a pass makes unused
// keeps its slot with producer kNone); node and parameter ids change.
#pragma once

#include <functional>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"

namespace ic {

// Host values of a graph's parameters: values[p] holds graph.params[p].shape.numel() floats.
using ParamValues = std::vector<std::vector<float>>;

struct InferencePassStats {
  int removed_identity_dropout = 0;  // dropout nodes removed (the identity at inference)
  int removed_dead_nodes = 0;        // nodes neither the logits nor a loss needs (aux heads)
  int folded_batch_norm = 0;         // BatchNorm nodes folded into the convolution before them
  int fused_conv_relu = 0;           // ReLUs that became their convolution's post-op
  int fused_conv_activation = 0;     // ReLU6, sigmoid and swish nodes that became one
  int pools_after_conv = 0;          // average pools moved after their 1x1 convolution
  int fused_depthwise = 0;           // depthwise convolutions run inside the pointwise one before
  int removed_params = 0;            // parameters no node reads any more
  int bf16_activations = 0;          // values held in bf16 (graph/precision_pass.h)
  int casts = 0;                     // Cast nodes where values enter or leave bf16
  int float32_convolutions = 0;      // of a bf16 graph, those timed faster in f32 (kept f32)
  int int8_outputs = 0;  // int8 convolutions writing u8 (graph/quantize_pass.h), no Quantize
  int int8_layers_in_float32 = 0;  // of an int8 graph, convolutions timed faster in f32 (kept)
  int u8_pools = 0;                // pools on u8 between int8 layers (graph/u8_dataflow_pass.h)
  int u8_concats = 0;              // concatenations of u8
  int requantized = 0;             // u8 values moved to another scale for a u8 concatenation
};

struct InferenceGraph {
  Graph graph;
  ParamValues values;  // per ParamId of `graph`
  InferencePassStats stats;
};

// Fails unless `values` has one entry per parameter of `graph`, each of its shape's size.
Status check_param_values(const Graph& graph, const ParamValues& values);

// BatchNorm on moving statistics whose input is a convolution's output that nothing else
// reads (and the caller does not read) goes into that convolution: per output channel c,
//   s = gamma[c] / sqrt(moving_variance[c] + epsilon)   (gamma = 1 without one)
//   w'[.., c] = w[.., c] * s,   b'[c] = beta[c] + (b[c] - moving_mean[c]) * s   (b = 0 without)
// computed in double. The convolution then has a bias, the batch norm's fused ReLU, writes
// the batch norm's output, and reads the new parameters "<conv>/folded_weights" and
// "<conv>/folded_bias" (appended; the old ones stay until remove_unused_params). Other batch
// norms stay. Fails for a training graph or values that do not fit (see check_param_values),
// and for a moving variance with variance + epsilon <= 0.
Result<InferenceGraph> fold_batch_norm(const Graph& graph, const ParamValues& values);

// A convolution without a fused activation whose output only a Relu or an Activation node
// (ReLU6, sigmoid, swish) reads (and the caller does not) gets it as its post-op and writes its
// output; the Relu or Activation node goes. Inference graphs only (a training graph comes back
// as it is).
InferenceGraph fuse_conv_activations(InferenceGraph in);

// An average pool of stride 1 whose output only a 1x1, stride-1 convolution with fewer output
// than input channels reads (and the caller does not) runs after that convolution instead:
// both are linear per pixel and the pool's divisor (the window's real inputs) is the same for
// every channel, so avg_pool(conv(x)) = conv(avg_pool(x)) up to rounding, with the convolution's
// bias; its fused ReLU, which must come last, becomes a Relu node after the pool. The pool then
// averages the convolution's fewer channels (Inception's "Branch_3": 4 to 10 times fewer).
// The convolution keeps its name and parameters. Inference graphs only.
InferenceGraph pool_after_pointwise_conv(InferenceGraph in);

// A depthwise 3x3 convolution (stride 1 or 2, TF's SAME padding, a bias, float32) that alone
// reads the output of a pointwise one (1x1, stride 1, ungrouped, a bias, float32, not int8),
// which the caller does not read either, runs inside it (Conv2dDesc::fused_depthwise) where
// `accepts` says the backend takes the fused desc: the pointwise convolution then also reads
// the depthwise one's weights and bias (params 2 and 3) and writes its output, and the depthwise
// node goes. The pointwise output, often the largest value of a MobileNet block, is then never
// written whole; an endpoint naming it is dropped. Inference graphs only.
InferenceGraph fuse_depthwise_into_pointwise(InferenceGraph in,
                                             const std::function<bool(const Conv2dDesc&)>& accepts);

// Keeps only the nodes the logits and the losses depend on (an inference graph computes the
// aux head's logits for nothing); endpoints of removed values are dropped.
InferenceGraph remove_dead_nodes(InferenceGraph in);

// Drops the parameters (and their values) no node reads; the others keep their order.
InferenceGraph remove_unused_params(InferenceGraph in);

}  // namespace ic
