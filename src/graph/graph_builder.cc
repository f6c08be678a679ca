#include <stdexcept>

#include "graph/graph.h"

namespace ic {

ValueId Graph::endpoint(const std::string& name) const {
  for (const auto& [n, v] : endpoints)
    if (n == name) return v;
  return kNone;
}

ParamId Graph::find_param(const std::string& name) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == name) return static_cast<ParamId>(i);
  return kNone;
}

int64_t Graph::trainable_parameter_count() const {
  int64_t total = 0;
  for (const ParamInfo& p : params)
    if (p.trainable) total += p.shape.numel();
  return total;
}

int64_t Graph::multiply_adds() const {
  int64_t total = 0;
  for (const Node& node : nodes) total += op_multiply_adds(node.desc);
  return total;
}

int64_t Graph::bytes_accessed() const {
  int64_t total = 0;
  for (const Node& node : nodes) {
    for (const std::vector<ValueId>* ids : {&node.inputs, &node.outputs})
      for (ValueId v : *ids)
        total += values[v].shape.numel() * static_cast<int64_t>(dtype_size(values[v].dtype));
    for (const std::vector<ParamId>* ids : {&node.params, &node.state})
      for (ParamId p : *ids) total += params[p].shape.numel() * int64_t{sizeof(float)};
  }
  return total;
}

ValueId GraphBuilder::add_value(const std::string& name, Shape shape, DType dtype,
                                NodeId producer) {
  graph_.values.push_back(ValueInfo{name, std::move(shape), dtype, producer});
  return static_cast<ValueId>(graph_.values.size() - 1);
}

ParamId GraphBuilder::add_param(ParamInfo info) {
  // Model code is fixed, so a repeated name is a programming error, not bad input.
  if (graph_.find_param(info.name) != kNone)
    throw std::logic_error("duplicate parameter name " + info.name);
  graph_.params.push_back(std::move(info));
  return static_cast<ParamId>(graph_.params.size() - 1);
}

ValueId GraphBuilder::add_node(const std::string& name, OpDesc desc, std::vector<ValueId> inputs,
                               Shape out, std::vector<ParamId> params, std::vector<ParamId> state) {
  const auto node_id = static_cast<NodeId>(graph_.nodes.size());
  const ValueId y = add_value(name, std::move(out), DType::f32, node_id);
  graph_.nodes.push_back(
      Node{name, std::move(desc), std::move(inputs), {y}, std::move(params), std::move(state)});
  return y;
}

ValueId GraphBuilder::images(Shape shape) {
  graph_.images = add_value("images", std::move(shape), DType::f32, kNone);
  return graph_.images;
}

ValueId GraphBuilder::labels(int64_t batch) {
  graph_.labels = add_value("labels", Shape{batch}, DType::i32, kNone);
  return graph_.labels;
}

ValueId GraphBuilder::conv2d(ValueId x, const ConvOptions& o, const std::string& scope) {
  Conv2dDesc d;
  d.input = shape(x);
  d.out_channels = o.filters;
  d.kernel_h = o.kernel_h;
  d.kernel_w = o.kernel_w;
  d.stride_h = d.stride_w = o.stride;
  d.padding = o.padding;
  d.has_bias = o.bias;
  d.needs_input_grad = graph_.values.at(x).producer != kNone;
  d.compute = o.compute;
  d.groups = o.groups;
  if (o.groups < 1 || d.input.c() % o.groups != 0 || o.filters % o.groups != 0)
    throw std::logic_error("conv " + scope + ": " + std::to_string(o.groups) +
                           " groups do not divide " + std::to_string(d.input.c()) + " -> " +
                           std::to_string(o.filters) + " channels");
  std::vector<ParamId> params;
  params.push_back(add_param(ParamInfo{
      scope + "/" + o.weights_name,
      Shape{o.kernel_h, o.kernel_w, d.in_channels_per_group(), o.filters}, o.init, true, true}));
  if (o.bias)
    params.push_back(
        add_param(ParamInfo{scope + "/" + o.biases_name, Shape{o.filters},
                            ParamInit{ParamInit::Kind::zeros, 0.f}, true, o.decay_bias}));
  const Shape out = d.output();
  return add_node(scope, d, {x}, out, std::move(params));
}

ValueId GraphBuilder::depthwise_conv2d(ValueId x, const DepthwiseOptions& o,
                                       const std::string& scope) {
  Conv2dDesc d;
  d.input = shape(x);
  d.out_channels = d.input.c();
  d.groups = d.input.c();
  d.kernel_h = o.kernel_h;
  d.kernel_w = o.kernel_w;
  d.stride_h = d.stride_w = o.stride;
  d.padding = o.padding;
  d.needs_input_grad = graph_.values.at(x).producer != kNone;
  const ParamId w =
      add_param(ParamInfo{scope + "/" + o.weights_name,
                          Shape{o.kernel_h, o.kernel_w, d.input.c(), 1}, o.init, true, true});
  const Shape out = d.output();
  return add_node(scope, d, {x}, out, {w});
}

ValueId GraphBuilder::batch_norm(ValueId x, const BatchNormOptions& o, const std::string& scope) {
  BatchNormDesc d;
  d.input = shape(x);
  d.epsilon = o.epsilon;
  d.decay = o.decay;
  d.has_gamma = o.gamma;
  d.fused_relu = o.relu;
  d.training = graph_.training;
  const Shape channels{d.input.c()};
  const std::string bn = scope + o.suffix + "/";
  const ParamInit zeros{ParamInit::Kind::zeros, 0.f}, ones{ParamInit::Kind::ones, 0.f};
  std::vector<ParamId> params{add_param(ParamInfo{bn + "beta", channels, zeros, true, false})};
  if (o.gamma) params.push_back(add_param(ParamInfo{bn + "gamma", channels, ones, true, false}));
  std::vector<ParamId> state{
      add_param(ParamInfo{bn + "moving_mean", channels, zeros, false, false}),
      add_param(ParamInfo{bn + "moving_variance", channels, ones, false, false})};
  return add_node(scope + o.suffix, d, {x}, d.input, std::move(params), std::move(state));
}

ValueId GraphBuilder::relu(ValueId x, const std::string& name) {
  return add_node(name, ReluDesc{shape(x)}, {x}, shape(x));
}

ValueId GraphBuilder::activation(ValueId x, Activation function, const std::string& name) {
  return add_node(name, ActivationDesc{shape(x), function}, {x}, shape(x));
}

ValueId GraphBuilder::scale_channels(ValueId x, ValueId s, const std::string& name) {
  const Shape& in = shape(x);
  if (shape(s) != Shape{in.n(), in.c()})
    throw std::logic_error("scale_channels " + name + ": factors " + shape(s).str() +
                           " do not match " + in.str());
  return add_node(name, ChannelScaleDesc{in}, {x, s}, in);
}

ValueId GraphBuilder::zero_pad(ValueId x, Pads pads, const std::string& name) {
  const PadDesc d{shape(x), pads};
  const Shape out = d.output();
  return add_node(name, d, {x}, out);
}

ValueId GraphBuilder::drop_connect(ValueId x, float keep_prob, const std::string& name) {
  DropoutDesc d{shape(x), keep_prob, graph_.training};
  d.per_example = true;
  return add_node(name, d, {x}, shape(x));
}

ValueId GraphBuilder::max_pool(ValueId x, int kernel, int stride, Padding padding,
                               const std::string& name) {
  Pool2dDesc d{shape(x), PoolKind::max, kernel, kernel, stride, stride, padding};
  const Shape out = d.output();
  return add_node(name, d, {x}, out);
}

ValueId GraphBuilder::avg_pool(ValueId x, int kernel_h, int kernel_w, int stride, Padding padding,
                               const std::string& name) {
  Pool2dDesc d{shape(x), PoolKind::avg, kernel_h, kernel_w, stride, stride, padding};
  const Shape out = d.output();
  return add_node(name, d, {x}, out);
}

ValueId GraphBuilder::global_avg_pool(ValueId x, const std::string& name) {
  const Shape in = shape(x);
  return add_node(name, GlobalAvgPoolDesc{in}, {x}, Shape{in.n(), in.c()});
}

ValueId GraphBuilder::concat(const std::vector<ValueId>& xs, const std::string& name) {
  ConcatDesc d;
  for (ValueId x : xs) {
    const Shape& s = shape(x);
    if (!d.inputs.empty() &&
        (s.n() != d.inputs[0].n() || s.h() != d.inputs[0].h() || s.w() != d.inputs[0].w()))
      throw std::logic_error("concat " + name + ": shapes " + s.str() + " and " +
                             d.inputs[0].str() + " differ outside channels");
    d.inputs.push_back(s);
  }
  const Shape out = d.output();
  return add_node(name, d, xs, out);
}

ValueId GraphBuilder::dropout(ValueId x, float keep_prob, const std::string& name) {
  return add_node(name, DropoutDesc{shape(x), keep_prob, graph_.training}, {x}, shape(x));
}

ValueId GraphBuilder::dense(ValueId x, int64_t units, ParamInit init, const std::string& scope,
                            const std::string& weights_name, const std::string& biases_name,
                            bool decay_bias) {
  const Shape in = shape(x);
  if (in.rank() != 2) throw std::logic_error("dense " + scope + " needs [N,K], got " + in.str());
  DenseDesc d{in[0], in[1], units, true, graph_.values.at(x).producer != kNone};
  std::vector<ParamId> params{
      add_param(ParamInfo{scope + "/" + weights_name, Shape{in[1], units}, init, true, true}),
      add_param(ParamInfo{scope + "/" + biases_name, Shape{units},
                          ParamInit{ParamInit::Kind::zeros, 0.f}, true, decay_bias})};
  return add_node(scope, d, {x}, Shape{in[0], units}, std::move(params));
}

ValueId GraphBuilder::add(ValueId a, ValueId b, bool relu, const std::string& name) {
  if (shape(a) != shape(b))
    throw std::logic_error("add " + name + ": " + shape(a).str() + " vs " + shape(b).str());
  return add_node(name, AddDesc{shape(a), relu}, {a, b}, shape(a));
}

ValueId GraphBuilder::reshape(ValueId x, Shape out, const std::string& name) {
  if (out.numel() != shape(x).numel())
    throw std::logic_error("reshape " + name + ": " + shape(x).str() + " to " + out.str());
  return add_node(name, ReshapeDesc{shape(x), out}, {x}, out);
}

ValueId GraphBuilder::softmax_cross_entropy(ValueId logits, ValueId labels, float label_smoothing,
                                            float weight, const std::string& name) {
  const Shape s = shape(logits);
  SoftmaxCrossEntropyDesc d{s[0], s[1], label_smoothing, weight};
  const ValueId loss = add_node(name, d, {logits, labels}, Shape{});
  graph_.losses.push_back(loss);
  return loss;
}

void GraphBuilder::endpoint(const std::string& name, ValueId value) {
  graph_.endpoints.emplace_back(name, value);
}

}  // namespace ic
