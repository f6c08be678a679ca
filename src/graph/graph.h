// The static graph: values (tensors with shapes), parameters (TF-slim names and shapes) and
// nodes (ops over values and parameters), in execution order. Models build it with
// GraphBuilder; graph/compiled_graph.h turns it into planned memory and backend kernels.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/ops.h"
#include "core/tensor.h"

namespace ic {

using ValueId = int32_t;
using ParamId = int32_t;
using NodeId = int32_t;
constexpr int32_t kNone = -1;

// How a parameter starts (TF-slim's initialisers).
struct ParamInit {
  enum class Kind {
    zeros,
    ones,
    variance_scaling,  // TF variance_scaling_initializer(): truncated normal, scale 2, fan_in
    truncated_normal,  // N(0, stddev) truncated at 2 stddev
    glorot_uniform,    // TF xavier_initializer() (slim.fully_connected's default):
                       // U(-l, l), l = sqrt(6 / (fan_in + fan_out))
  };
  Kind kind = Kind::zeros;
  float stddev = 0.f;
};

struct ParamInfo {
  std::string name;  // "InceptionV3/Conv2d_1a_3x3/weights"
  Shape shape;       // conv: HWIO; dense: [in, out]
  ParamInit init;
  bool trainable = true;      // false: BN moving statistics
  bool weight_decay = false;  // conv and dense kernels: 4e-5 * Σw²/2 joins the loss
};

struct ValueInfo {
  std::string name;  // the producing node's name (or the input's name)
  Shape shape;
  DType dtype = DType::f32;
  NodeId producer = kNone;  // kNone for graph inputs
};

struct Node {
  std::string name;  // scope, e.g. "InceptionV3/Mixed_5b/Branch_1/Conv2d_0b_5x5"
  OpDesc desc;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<ParamId> params;  // trainable, in the order ops.h documents for the op
  std::vector<ParamId> state;   // non-trainable (BN moving statistics)
};

struct Graph {
  bool training = true;  // BN uses batch statistics, dropout is on, losses are built
  std::vector<ValueInfo> values;
  std::vector<ParamInfo> params;
  std::vector<Node> nodes;  // topological (build) order
  // TF-slim end_points in build order: "Conv2d_1a_3x3", ..., "Mixed_7c", "AuxLogits", "Logits".
  std::vector<std::pair<std::string, ValueId>> endpoints;
  ValueId images = kNone;       // [N,H,W,3]
  ValueId labels = kNone;       // [N] int32; kNone when the graph has no loss
  ValueId logits = kNone;       // [N,num_classes]
  std::vector<ValueId> losses;  // scalar terms whose sum (plus weight decay) is the loss

  ValueId endpoint(const std::string& name) const;    // kNone if absent
  ParamId find_param(const std::string& name) const;  // kNone if absent
  int64_t trainable_parameter_count() const;
  int64_t multiply_adds() const;  // one forward pass, whole batch
  // Bytes one forward pass reads and writes if nothing stays in cache between ops: every node's
  // input and output values at their dtypes plus its parameters as float32 (ParamInfo has no
  // storage type). For a memory-bound op (depthwise, pooling, elementwise) the achieved GB/s
  // is this over the time taken.
  int64_t bytes_accessed() const;
};

// Builds a Graph one op at a time, inferring each output's shape. Methods that create
// parameters take the TF-slim scope and append "/weights", "/biases", "/BatchNorm/beta"...
class GraphBuilder {
 public:
  explicit GraphBuilder(bool training) { graph_.training = training; }

  ValueId images(Shape shape);  // NHWC float32
  ValueId labels(int64_t batch);

  struct ConvOptions {
    int64_t filters = 0;
    int kernel_h = 1, kernel_w = 1;
    int stride = 1;
    Padding padding = Padding::same;
    bool bias = false;
    bool decay_bias = false;  // the bias joins weight decay too (the kernel always does)
    ParamInit init{ParamInit::Kind::variance_scaling, 0.f};
    DType compute = DType::f32;
    int64_t groups = 1;  // weights [kh,kw,Ci/groups,filters] (ops.h, Conv2dDesc)
    // The variables' last name part: TF-slim's "weights"/"biases", Keras' "kernel"/"bias".
    std::string weights_name = "weights", biases_name = "biases";
  };
  ValueId conv2d(ValueId x, const ConvOptions& options, const std::string& scope);

  // A depthwise convolution (multiplier 1): one kh x kw filter per channel, weights
  // "<scope>/<weights_name>" [kh,kw,C,1] as TensorFlow's depthwise filter.
  struct DepthwiseOptions {
    int kernel_h = 3, kernel_w = 3;
    int stride = 1;
    Padding padding = Padding::same;
    ParamInit init{ParamInit::Kind::variance_scaling, 0.f};
    std::string weights_name = "depthwise_weights";  // Keras: "depthwise_kernel"
  };
  ValueId depthwise_conv2d(ValueId x, const DepthwiseOptions& options, const std::string& scope);

  struct BatchNormOptions {
    float decay = 0.996f;
    float epsilon = 1e-3f;
    bool gamma = false;  // TF-slim Inception: beta only
    bool relu = false;   // fused ReLU after the normalisation
    // Between the scope and the variable names: TF-slim's "/BatchNorm"; "" for Keras, whose
    // scope is the layer ("conv1/bn").
    std::string suffix = "/BatchNorm";
  };
  // Parameters "<scope><suffix>/beta" (+gamma), state ".../moving_mean", ".../moving_variance".
  ValueId batch_norm(ValueId x, const BatchNormOptions& options, const std::string& scope);

  ValueId relu(ValueId x, const std::string& name);
  ValueId activation(ValueId x, Activation function, const std::string& name);
  // x[N,H,W,C] * s[N,C], per example and channel (squeeze-and-excitation).
  ValueId scale_channels(ValueId x, ValueId s, const std::string& name);
  ValueId zero_pad(ValueId x, Pads pads, const std::string& name);
  // Drop-connect: keeps or drops each example's whole x, rescaled by 1 / keep_prob (training).
  ValueId drop_connect(ValueId x, float keep_prob, const std::string& name);
  ValueId max_pool(ValueId x, int kernel, int stride, Padding padding, const std::string& name);
  ValueId avg_pool(ValueId x, int kernel_h, int kernel_w, int stride, Padding padding,
                   const std::string& name);
  ValueId global_avg_pool(ValueId x, const std::string& name);  // [N,H,W,C] -> [N,C]
  ValueId concat(const std::vector<ValueId>& xs, const std::string& name);
  ValueId dropout(ValueId x, float keep_prob, const std::string& name);
  // [N,K] -> [N,units]; parameters "<scope>/weights" [K,units] and "<scope>/biases".
  // Keras' names are "kernel" and "bias". The weights are weight-decayed, the biases with
  // decay_bias.
  ValueId dense(ValueId x, int64_t units, ParamInit init, const std::string& scope,
                const std::string& weights_name = "weights",
                const std::string& biases_name = "biases", bool decay_bias = false);
  ValueId add(ValueId a, ValueId b, bool relu, const std::string& name);
  ValueId reshape(ValueId x, Shape shape, const std::string& name);
  // Adds a scalar loss term (training graphs) and returns it.
  ValueId softmax_cross_entropy(ValueId logits, ValueId labels, float label_smoothing, float weight,
                                const std::string& name);

  void endpoint(const std::string& name, ValueId value);
  void set_logits(ValueId logits) { graph_.logits = logits; }

  const Shape& shape(ValueId value) const { return graph_.values.at(value).shape; }
  bool training() const { return graph_.training; }
  Graph finish() { return std::move(graph_); }

 private:
  ValueId add_value(const std::string& name, Shape shape, DType dtype, NodeId producer);
  ParamId add_param(ParamInfo info);
  ValueId add_node(const std::string& name, OpDesc desc, std::vector<ValueId> inputs, Shape out,
                   std::vector<ParamId> params = {}, std::vector<ParamId> state = {});

  Graph graph_;
};

}  // namespace ic
