#include "infer/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <utility>

#include "infer/onnx_qdq.h"
#include "io/file_system.h"

namespace ic {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian: the float bytes are copied as they are");

FoldedConv fold_conv(const Conv2dDesc& conv, const float* hwio_weights, const float* conv_bias,
                     const BatchNormValues* bn) {
  // ci: the input channels each filter reads (Ci / groups); HWIO and OIHW both keep them so.
  const int64_t co = conv.out_channels, ci = conv.in_channels_per_group();
  const int64_t kh = conv.kernel_h, kw = conv.kernel_w;
  FoldedConv out;
  out.weights.resize(static_cast<size_t>(co * ci * kh * kw));
  out.bias.resize(static_cast<size_t>(co));
  for (int64_t o = 0; o < co; ++o) {
    double scale = 1.0, shift = conv_bias ? conv_bias[o] : 0.0;
    if (bn != nullptr) {
      const double gamma = bn->gamma ? bn->gamma[o] : 1.0;
      scale = gamma / std::sqrt(static_cast<double>(bn->variance[o]) + bn->epsilon);
      shift = (shift - bn->mean[o]) * scale + bn->beta[o];
    }
    out.bias[static_cast<size_t>(o)] = static_cast<float>(shift);
    for (int64_t i = 0; i < ci; ++i)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
          out.weights[static_cast<size_t>(((o * ci + i) * kh + y) * kw + x)] =
              static_cast<float>(hwio_weights[((y * kw + x) * ci + i) * co + o] * scale);
  }
  return out;
}

namespace {

// Walks the inference graph backwards from the logits, then forwards emitting ONNX nodes.
// Every 4-D activation is NCHW inside the ONNX graph (what Conv and the pools take); 2-D ones
// are [N,features] as in ours.
class OnnxBuilder {
 public:
  OnnxBuilder(const InferenceModel& model, const Graph& graph, onnx::GraphProto& out)
      : model_(model), graph_(graph), out_(out) {}

  Status build();

 private:
  Status emit(NodeId id);
  Status emit_conv(const Node& node, const Node* bn_node);
  Status emit_reshape(const Node& node, const ReshapeDesc& desc);
  Result<const float*> param(ParamId id, int64_t numel) const;
  // int8 models: the table's entry for layer `name` (null: the layer stays float32).
  const LayerQuantization* quantization(const std::string& name) const;
  Status check_quantization_table() const;
  // x through Clip -> QuantizeLinear -> DequantizeLinear at `scale`: one chain per (value,
  // scale), shared by every quantized layer that reads it, as graph/quantize_pass.cc does.
  std::string quantized_input(ValueId x, float scale);
  // The int8 initializer q and the DequantizeLinear (per channel on `axis`) that feeds a layer.
  std::string dequantized_weights(const std::string& layer, const std::vector<int64_t>& dims,
                                  const std::vector<int8_t>& q, const std::vector<float>& scales,
                                  int64_t axis);

  std::string fresh(const std::string& base);  // a tensor name not used before
  const std::string& name_of(ValueId v) { return names_.at(v); }
  std::string output_name(ValueId v) {  // names (once) the tensor a node writes
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    return names_[v] = fresh(graph_.values.at(static_cast<size_t>(v)).name);
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name);
  std::string initializer(const std::string& name, const std::vector<int64_t>& dims,
                          const void* data, size_t bytes, onnx::TensorProto::DataType type);
  std::string float_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<float>& values) {
    return initializer(name, dims, values.data(), values.size() * sizeof(float),
                       onnx::TensorProto::FLOAT);
  }
  std::string scalar_initializer(const std::string& name, float value) {
    return initializer(name, {}, &value, sizeof value, onnx::TensorProto::FLOAT);
  }
  std::string shape_initializer(const std::string& name, const std::vector<int64_t>& dims) {
    return initializer(name, {static_cast<int64_t>(dims.size())}, dims.data(),
                       dims.size() * sizeof(int64_t), onnx::TensorProto::INT64);
  }
  static void ints(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& values);
  static void integer(onnx::NodeProto& n, const char* name, int64_t value);
  void declare(onnx::ValueInfoProto* info, const std::string& name,
               onnx::TensorProto::DataType type, const std::vector<int64_t>& dims);

  const InferenceModel& model_;
  const Graph& graph_;
  onnx::GraphProto& out_;
  std::map<ValueId, std::string> names_;
  std::set<std::string> used_;
  std::vector<bool> node_needed_;  // the node feeds the logits (the aux head does not)
  std::vector<int> consumers_;     // per value: how many needed nodes read it
  std::set<NodeId> folded_;        // batch norms already folded into their convolution
  std::map<std::pair<ValueId, uint32_t>, std::string> dequantized_inputs_;  // by (value, scale)
};

std::string OnnxBuilder::fresh(const std::string& base) {
  const std::string stem = base.empty() ? "t" : base;
  std::string name = stem;
  for (int k = 1; used_.count(name) != 0; ++k) name = stem + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

onnx::NodeProto& OnnxBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs,
                                   const std::string& name) {
  onnx::NodeProto& n = *out_.add_node();
  n.set_op_type(op);
  n.set_name(name);
  for (const std::string& in : inputs) n.add_input(in);
  for (const std::string& o : outputs) n.add_output(o);
  return n;
}

void OnnxBuilder::ints(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& values) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
}

void OnnxBuilder::integer(onnx::NodeProto& n, const char* name, int64_t value) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
}

std::string OnnxBuilder::initializer(const std::string& name, const std::vector<int64_t>& dims,
                                     const void* data, size_t bytes,
                                     onnx::TensorProto::DataType type) {
  onnx::TensorProto& t = *out_.add_initializer();
  const std::string unique = fresh(name);
  t.set_name(unique);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(data, bytes);
  return unique;
}

void OnnxBuilder::declare(onnx::ValueInfoProto* info, const std::string& name,
                          onnx::TensorProto::DataType type, const std::vector<int64_t>& dims) {
  info->set_name(name);
  onnx::TypeProto_Tensor& tensor = *info->mutable_type()->mutable_tensor_type();
  tensor.set_elem_type(type);
  for (size_t i = 0; i < dims.size(); ++i) {
    onnx::TensorShapeProto_Dimension& d = *tensor.mutable_shape()->add_dim();
    if (i == 0) {
      d.set_dim_param("N");  // the batch: any size
    } else {
      d.set_dim_value(dims[i]);
    }
  }
}

Result<const float*> OnnxBuilder::param(ParamId id, int64_t numel) const {
  const ParamInfo& info = graph_.params.at(static_cast<size_t>(id));
  auto it = model_.weights.find(info.name);
  if (it == model_.weights.end()) {
    return error(model_.checkpoint, ": no tensor ", info.name, " for the ONNX export");
  }
  const TensorEntry& entry = it->second;
  if (entry.dtype != DType::f32 ||
      entry.bytes.size() != static_cast<size_t>(numel) * sizeof(float)) {
    return error(model_.checkpoint, ": tensor ", info.name, " is not f32 with ", numel, " values");
  }
  return reinterpret_cast<const float*>(entry.bytes.data());
}

const LayerQuantization* OnnxBuilder::quantization(const std::string& name) const {
  if (!model_.int8) return nullptr;
  auto it = model_.int8->layers.find(name);
  return it == model_.int8->layers.end() ? nullptr : &it->second;
}

Status OnnxBuilder::check_quantization_table() const {
  if (!model_.int8) return {};
  for (const auto& [name, layer] : model_.int8->layers) {
    (void)layer;
    const bool quantizable =
        std::any_of(graph_.nodes.begin(), graph_.nodes.end(), [&](const Node& n) {
          return n.name == name && (std::holds_alternative<Conv2dDesc>(n.desc) ||
                                    std::holds_alternative<DenseDesc>(n.desc));
        });
    if (!quantizable)
      return invalid_argument("ONNX export: int8 layer ", name,
                              " is not a convolution or dense layer of this model's graph");
  }
  return {};
}

std::string OnnxBuilder::quantized_input(ValueId x, float scale) {
  const auto key = std::make_pair(x, std::bit_cast<uint32_t>(scale));
  auto done = dequantized_inputs_.find(key);
  if (done != dequantized_inputs_.end()) return done->second;
  const std::string input = name_of(x);
  const uint8_t zero = 0;
  const std::string scale_name = scalar_initializer(input + "/input_scale", scale);
  const std::string zero_point =
      initializer(input + "/zero_point", {}, &zero, sizeof zero, onnx::TensorProto::UINT8);
  const std::string low = scalar_initializer(input + "/clip_min", 0.f);
  const std::string high = scalar_initializer(input + "/clip_max", activation_clip_max(scale));
  const std::string clipped = fresh(input + "/clipped");
  const std::string quantized = fresh(input + "/quantized");
  const std::string dequantized = fresh(input + "/dequantized");
  node("Clip", {input, low, high}, {clipped}, clipped);
  node("QuantizeLinear", {clipped, scale_name, zero_point}, {quantized}, quantized);
  node("DequantizeLinear", {quantized, scale_name, zero_point}, {dequantized}, dequantized);
  return dequantized_inputs_[key] = dequantized;
}

std::string OnnxBuilder::dequantized_weights(const std::string& layer,
                                             const std::vector<int64_t>& dims,
                                             const std::vector<int8_t>& q,
                                             const std::vector<float>& scales, int64_t axis) {
  const std::string q_name =
      initializer(layer + "/weights_quantized", dims, q.data(), q.size(), onnx::TensorProto::INT8);
  const std::string scale_name =
      float_initializer(layer + "/weight_scales", {static_cast<int64_t>(scales.size())}, scales);
  const std::vector<int8_t> zeros(scales.size(), 0);
  const std::string zero_points =
      initializer(layer + "/weight_zero_points", {static_cast<int64_t>(zeros.size())}, zeros.data(),
                  zeros.size(), onnx::TensorProto::INT8);
  const std::string w = fresh(layer + "/weights");
  integer(node("DequantizeLinear", {q_name, scale_name, zero_points}, {w}, w), "axis", axis);
  return w;
}

Status OnnxBuilder::emit_conv(const Node& conv_node, const Node* bn_node) {
  const auto& conv = std::get<Conv2dDesc>(conv_node.desc);
  const int64_t co = conv.out_channels, ci = conv.in_channels_per_group();
  IC_ASSIGN_OR_RETURN(const float* w, param(conv_node.params.at(0), conv.weight_count()));
  const float* bias = nullptr;
  if (conv.has_bias) {
    IC_ASSIGN_OR_RETURN(bias, param(conv_node.params.at(1), co));
  }

  BatchNormValues bn;
  bool relu = false;
  ValueId result = conv_node.outputs.at(0);
  if (bn_node != nullptr) {
    const auto& d = std::get<BatchNormDesc>(bn_node->desc);
    IC_ASSIGN_OR_RETURN(bn.beta, param(bn_node->params.at(0), co));
    if (d.has_gamma) {
      IC_ASSIGN_OR_RETURN(bn.gamma, param(bn_node->params.at(1), co));
    }
    IC_ASSIGN_OR_RETURN(bn.mean, param(bn_node->state.at(0), co));
    IC_ASSIGN_OR_RETURN(bn.variance, param(bn_node->state.at(1), co));
    bn.epsilon = d.epsilon;
    relu = d.fused_relu;
    result = bn_node->outputs.at(0);
  }
  const FoldedConv folded = fold_conv(conv, w, bias, bn_node ? &bn : nullptr);
  const std::vector<int64_t> w_dims{co, ci, conv.kernel_h, conv.kernel_w};
  std::string x = name_of(conv_node.inputs.at(0)), w_name;
  if (const LayerQuantization* q = quantization(conv_node.name)) {
    // The folded weights, at their own scales, are what our int8 layer quantizes
    // (quantize_layers runs after the folding); they give the integers an int8 export stores.
    IC_RETURN_IF_ERROR(check_layer_quantization(conv_node.name, *q, co));
    x = quantized_input(conv_node.inputs.at(0), q->input_scale);
    const std::vector<float> scales = channel_weight_scales(folded.weights, co, ChannelAxis::outer);
    w_name = dequantized_weights(conv_node.name, w_dims,
                                 quantize_weights(folded.weights, scales, ChannelAxis::outer),
                                 scales, /*axis=*/0);
  } else {
    w_name = float_initializer(conv_node.name + "/weights", w_dims, folded.weights);
  }
  const std::string b_name = float_initializer(conv_node.name + "/biases", {co}, folded.bias);

  const Pads p = tf_pads(conv.input.h(), conv.input.w(), conv.kernel_h, conv.kernel_w,
                         conv.stride_h, conv.stride_w, conv.padding);
  const std::string y = relu ? fresh(conv_node.name + "/folded") : output_name(result);
  onnx::NodeProto& n = node("Conv", {x, w_name, b_name}, {y}, conv_node.name);
  ints(n, "kernel_shape", {conv.kernel_h, conv.kernel_w});
  ints(n, "strides", {conv.stride_h, conv.stride_w});
  ints(n, "pads", {p.top, p.left, p.bottom, p.right});  // begins (H, W), then ends
  if (conv.groups > 1) integer(n, "group", conv.groups);
  if (relu) node("Relu", {y}, {output_name(result)}, conv_node.name + "/Relu");
  return {};
}

// Ours: row-major NHWC reinterpretations. In the ONNX graph a 4-D value is NCHW, so a
// reshape between 4-D and 2-D goes through NHWC unless H = W = 1 (then both orders agree).
Status OnnxBuilder::emit_reshape(const Node& n, const ReshapeDesc& desc) {
  const std::string& x = name_of(n.inputs.at(0));
  const std::string y = output_name(n.outputs.at(0));
  const int in_rank = desc.input.rank(), out_rank = desc.output.rank();
  if (in_rank == 4 && out_rank == 2) {
    std::string src = x;
    if (desc.input.h() * desc.input.w() != 1) {
      src = fresh(n.name + "/nhwc");
      ints(node("Transpose", {x}, {src}, n.name + "/ToNHWC"), "perm", {0, 2, 3, 1});
    }
    integer(node("Flatten", {src}, {y}, n.name), "axis", 1);
    return {};
  }
  if (in_rank == 2 && out_rank == 4) {
    const Shape& s = desc.output;
    const bool pixel = s.h() * s.w() == 1;
    const std::string shape =
        shape_initializer(n.name + "/shape", pixel ? std::vector<int64_t>{-1, s.c(), 1, 1}
                                                   : std::vector<int64_t>{-1, s.h(), s.w(), s.c()});
    const std::string r = pixel ? y : fresh(n.name + "/nhwc");
    node("Reshape", {x, shape}, {r}, n.name);
    if (!pixel) ints(node("Transpose", {r}, {y}, n.name + "/ToNCHW"), "perm", {0, 3, 1, 2});
    return {};
  }
  return error("ONNX export: node ", n.name, " reshapes ", desc.input.str(), " to ",
               desc.output.str(), "; only 4-D <-> 2-D reshapes are supported");
}

Status OnnxBuilder::emit(NodeId id) {
  const Node& n = graph_.nodes.at(static_cast<size_t>(id));
  if (folded_.count(id) != 0) return {};
  auto in = [&](size_t i) { return name_of(n.inputs.at(i)); };
  auto out = [&]() { return output_name(n.outputs.at(0)); };

  if (std::holds_alternative<Conv2dDesc>(n.desc)) {
    // Fold the batch norm that alone reads this conv's output.
    const ValueId y = n.outputs.at(0);
    if (consumers_.at(static_cast<size_t>(y)) == 1) {
      for (size_t k = static_cast<size_t>(id) + 1; k < graph_.nodes.size(); ++k) {
        const Node& next = graph_.nodes[k];
        if (node_needed_[k] && next.inputs.size() == 1 && next.inputs[0] == y &&
            std::holds_alternative<BatchNormDesc>(next.desc)) {
          folded_.insert(static_cast<NodeId>(k));
          return emit_conv(n, &next);
        }
      }
    }
    return emit_conv(n, nullptr);
  }
  if (const auto* bn = std::get_if<BatchNormDesc>(&n.desc)) {
    const int64_t c = bn->input.c();
    IC_ASSIGN_OR_RETURN(const float* beta, param(n.params.at(0), c));
    std::vector<float> gamma(static_cast<size_t>(c), 1.f);
    if (bn->has_gamma) {
      IC_ASSIGN_OR_RETURN(const float* g, param(n.params.at(1), c));
      gamma.assign(g, g + c);
    }
    IC_ASSIGN_OR_RETURN(const float* mean, param(n.state.at(0), c));
    IC_ASSIGN_OR_RETURN(const float* var, param(n.state.at(1), c));
    const std::string y = bn->fused_relu ? fresh(n.name + "/normalized") : out();
    onnx::NodeProto& node_proto = node(
        "BatchNormalization",
        {in(0), float_initializer(n.name + "/gamma", {c}, gamma),
         float_initializer(n.name + "/beta", {c}, std::vector<float>(beta, beta + c)),
         float_initializer(n.name + "/moving_mean", {c}, std::vector<float>(mean, mean + c)),
         float_initializer(n.name + "/moving_variance", {c}, std::vector<float>(var, var + c))},
        {y}, n.name);
    onnx::AttributeProto& eps = *node_proto.add_attribute();
    eps.set_name("epsilon");
    eps.set_type(onnx::AttributeProto::FLOAT);
    eps.set_f(bn->epsilon);
    if (bn->fused_relu) node("Relu", {y}, {out()}, n.name + "/Relu");
    return {};
  }
  if (std::holds_alternative<ReluDesc>(n.desc)) {
    node("Relu", {in(0)}, {out()}, n.name);
    return {};
  }
  if (const auto* pool = std::get_if<Pool2dDesc>(&n.desc)) {
    const Shape o = pool->output();
    const Pads p = tf_pads(pool->input.h(), pool->input.w(), pool->kernel_h, pool->kernel_w,
                           pool->stride_h, pool->stride_w, pool->padding);
    // ONNX's output size (floor mode) must be TensorFlow's, or the window does not fit.
    const int64_t onnx_h =
        (pool->input.h() + p.top + p.bottom - pool->kernel_h) / pool->stride_h + 1;
    const int64_t onnx_w =
        (pool->input.w() + p.left + p.right - pool->kernel_w) / pool->stride_w + 1;
    if (o.h() < 1 || o.w() < 1 || onnx_h != o.h() || onnx_w != o.w()) {
      return error("ONNX export: pooling node ", n.name, " (", pool->kernel_h, "x", pool->kernel_w,
                   " window on ", pool->input.str(),
                   ") has no ONNX equivalent with the same output size");
    }
    const bool avg = pool->kind == PoolKind::avg;
    onnx::NodeProto& node_proto = node(avg ? "AveragePool" : "MaxPool", {in(0)}, {out()}, n.name);
    ints(node_proto, "kernel_shape", {pool->kernel_h, pool->kernel_w});
    ints(node_proto, "strides", {pool->stride_h, pool->stride_w});
    ints(node_proto, "pads", {p.top, p.left, p.bottom, p.right});
    if (avg) integer(node_proto, "count_include_pad", 0);  // TensorFlow averages real pixels
    return {};
  }
  if (std::holds_alternative<GlobalAvgPoolDesc>(n.desc)) {
    const std::string pooled = fresh(n.name + "/nc11");
    node("GlobalAveragePool", {in(0)}, {pooled}, n.name);
    integer(node("Flatten", {pooled}, {out()}, n.name + "/Flatten"), "axis", 1);
    return {};
  }
  if (std::holds_alternative<ConcatDesc>(n.desc)) {
    std::vector<std::string> xs;
    for (size_t i = 0; i < n.inputs.size(); ++i) xs.push_back(in(i));
    integer(node("Concat", xs, {out()}, n.name), "axis", 1);  // channels (NCHW) or features
    return {};
  }
  if (const auto* dropout = std::get_if<DropoutDesc>(&n.desc)) {
    if (dropout->training)
      return error("ONNX export: dropout node ", n.name, " is in training mode");
    // Identity at inference: the output is the input tensor (an Identity node if it is named).
    if (n.outputs.at(0) == graph_.logits) {
      node("Identity", {in(0)}, {out()}, n.name);
    } else {
      names_[n.outputs.at(0)] = in(0);
    }
    return {};
  }
  if (const auto* dense = std::get_if<DenseDesc>(&n.desc)) {
    const int64_t k = dense->in_features, m = dense->out_features;
    IC_ASSIGN_OR_RETURN(const float* w, param(n.params.at(0), k * m));
    std::vector<std::string> inputs;
    if (const LayerQuantization* q = quantization(n.name)) {
      IC_RETURN_IF_ERROR(check_layer_quantization(n.name, *q, m));
      const std::span<const float> weights(w, static_cast<size_t>(k * m));
      const std::vector<float> scales = channel_weight_scales(weights, m, ChannelAxis::inner);
      inputs = {quantized_input(n.inputs.at(0), q->input_scale),
                dequantized_weights(n.name, {k, m},
                                    quantize_weights(weights, scales, ChannelAxis::inner), scales,
                                    /*axis=*/1)};
    } else {
      inputs = {in(0),
                float_initializer(n.name + "/weights", {k, m}, std::vector<float>(w, w + k * m))};
    }
    if (dense->has_bias) {
      IC_ASSIGN_OR_RETURN(const float* b, param(n.params.at(1), m));
      inputs.push_back(float_initializer(n.name + "/biases", {m}, std::vector<float>(b, b + m)));
    }
    node("Gemm", inputs, {out()}, n.name);  // y = x·W + b, W stored [in, out] as ours
    return {};
  }
  if (const auto* add = std::get_if<AddDesc>(&n.desc)) {
    const std::string sum = add->fused_relu ? fresh(n.name + "/sum") : out();
    node("Add", {in(0), in(1)}, {sum}, n.name);
    if (add->fused_relu) node("Relu", {sum}, {out()}, n.name + "/Relu");
    return {};
  }
  if (const auto* reshape = std::get_if<ReshapeDesc>(&n.desc)) return emit_reshape(n, *reshape);
  if (const auto* act = std::get_if<ActivationDesc>(&n.desc)) {
    switch (act->function) {
      case Activation::relu6:
        node("Clip",
             {in(0), scalar_initializer(n.name + "/min", 0.f),
              scalar_initializer(n.name + "/max", 6.f)},
             {out()}, n.name);
        return {};
      case Activation::sigmoid: node("Sigmoid", {in(0)}, {out()}, n.name); return {};
      case Activation::swish: {
        const std::string gate = fresh(n.name + "/sigmoid");
        node("Sigmoid", {in(0)}, {gate}, n.name + "/Sigmoid");
        node("Mul", {in(0), gate}, {out()}, n.name);
        return {};
      }
    }
  }
  if (const auto* scale = std::get_if<ChannelScaleDesc>(&n.desc)) {
    // s [N,C] as [N,C,1,1], broadcast over the NCHW map.
    const std::string factors = fresh(n.name + "/nc11");
    node("Reshape", {in(1), shape_initializer(n.name + "/shape", {-1, scale->input.c(), 1, 1})},
         {factors}, n.name + "/Reshape");
    node("Mul", {in(0), factors}, {out()}, n.name);
    return {};
  }
  if (const auto* pad = std::get_if<PadDesc>(&n.desc)) {
    const Pads& p = pad->pads;  // NCHW: begins of N,C,H,W then their ends
    node("Pad",
         {in(0),
          shape_initializer(n.name + "/pads", {0, 0, p.top, p.left, 0, 0, p.bottom, p.right})},
         {out()}, n.name);
    return {};
  }
  return error("ONNX export: node ", n.name, " (", op_name(n.desc),
               ") is not part of an inference network");
}

Status OnnxBuilder::build() {
  if (graph_.images == kNone || graph_.logits == kNone) {
    return error("ONNX export: the graph has no images input or no logits");
  }
  IC_RETURN_IF_ERROR(check_quantization_table());
  // Only what the logits need: the auxiliary head is left out.
  std::vector<bool> needed(graph_.values.size(), false);
  node_needed_.assign(graph_.nodes.size(), false);
  needed[static_cast<size_t>(graph_.logits)] = true;
  for (size_t k = graph_.nodes.size(); k-- > 0;) {
    const Node& n = graph_.nodes[k];
    for (ValueId o : n.outputs) node_needed_[k] = node_needed_[k] || needed[static_cast<size_t>(o)];
    if (!node_needed_[k]) continue;
    for (ValueId i : n.inputs) needed[static_cast<size_t>(i)] = true;
  }
  consumers_.assign(graph_.values.size(), 0);
  for (size_t k = 0; k < graph_.nodes.size(); ++k) {
    if (!node_needed_[k]) continue;
    for (ValueId i : graph_.nodes[k].inputs) ++consumers_[static_cast<size_t>(i)];
  }

  const Shape& image = graph_.values.at(static_cast<size_t>(graph_.images)).shape;
  const int64_t classes = graph_.values.at(static_cast<size_t>(graph_.logits)).shape[1];
  used_.insert("images");
  declare(out_.add_input(), "images", onnx::TensorProto::FLOAT, image.dims());
  names_[graph_.images] = fresh("images_nchw");
  ints(node("Transpose", {"images"}, {names_[graph_.images]}, "ToNCHW"), "perm", {0, 3, 1, 2});
  used_.insert("logits");
  names_[graph_.logits] = "logits";

  for (size_t k = 0; k < graph_.nodes.size(); ++k) {
    if (node_needed_[k]) IC_RETURN_IF_ERROR(emit(static_cast<NodeId>(k)));
  }
  const std::string probabilities = fresh("probabilities"), classes_name = fresh("classes");
  integer(node("Softmax", {"logits"}, {probabilities}, "Predictions"), "axis", 1);
  onnx::NodeProto& argmax = node("ArgMax", {"logits"}, {classes_name}, "Classes");
  integer(argmax, "axis", 1);
  integer(argmax, "keepdims", 0);
  declare(out_.add_output(), probabilities, onnx::TensorProto::FLOAT, {image.n(), classes});
  declare(out_.add_output(), classes_name, onnx::TensorProto::INT64, {image.n()});
  declare(out_.add_output(), "logits", onnx::TensorProto::FLOAT, {image.n(), classes});
  return {};
}

void metadata(onnx::ModelProto& m, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto& e = *m.add_metadata_props();
  e.set_key(key);
  e.set_value(value);
}

}  // namespace

Status export_onnx(const InferenceModel& model, const std::string& path) {
  IC_ASSIGN_OR_RETURN(Graph graph, build_inference_graph(model, 1));
  if (graph.training) return error("ONNX export: the inference graph is in training mode");
  onnx::ModelProto m;
  m.set_ir_version(8);  // ONNX 1.10+ readers; opset 13 needs IR >= 7
  m.set_producer_name("inception.cpp");
  m.set_model_version(model.global_step);
  const bool vgg = model.meta.preprocessing == PreprocessOptions::Kind::vgg;
  const std::string input_layout =
      vgg ? "NHWC, RGB, (x / 255 - ImageNet mean) / 128 (VGG evaluation preprocessing)"
          : "NHWC, RGB, [-1,1] (Inception evaluation preprocessing)";
  m.set_doc_string(model.meta.model + ": images float32 [N,H,W,3] " + input_layout +
                   " -> logits, probabilities, classes");
  onnx::OperatorSetIdProto& opset = *m.add_opset_import();
  opset.set_domain("");
  opset.set_version(kOnnxOpset);
  metadata(m, "model", model.meta.model);
  metadata(m, "checkpoint", model.checkpoint);
  metadata(m, "global_step", std::to_string(model.global_step));
  metadata(m, "num_classes", std::to_string(model.meta.num_classes));
  metadata(m, "image_size",
           std::to_string(model.meta.height) + "x" + std::to_string(model.meta.width));
  std::ostringstream depth;
  depth.precision(17);
  depth << model.meta.depth_multiplier;
  metadata(m, "depth_multiplier", depth.str());
  metadata(m, "preprocessing", preprocessing_name(model.meta.preprocessing));
  metadata(m, "input_layout", input_layout);
  if (model.int8) {
    metadata(m, "quantization",
             "int8 QDQ: uint8 activations in [0,127], int8 weights per output channel");
    metadata(m, "int8_layers", std::to_string(model.int8->layers.size()));
    metadata(m, "calibration_images", std::to_string(model.int8->calibration_images));
  }

  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name(model.meta.model);
  OnnxBuilder builder(model, graph, g);
  IC_RETURN_IF_ERROR(builder.build());

  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    return error("ONNX export: the model fails ONNX's checker: ", e.what());
  }
  if (m.ByteSizeLong() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return error(path, ": the ONNX model is over protobuf's 2 GiB limit");
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes)) return error(path, ": cannot serialise the ONNX model");
  return write_file_atomically(path, {bytes}).with_context("writing ONNX model " + path);
}

}  // namespace ic
