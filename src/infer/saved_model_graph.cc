#include "infer/saved_model_graph.h"

#include <map>

#include "data/preprocessing.h"
#include "infer/image_bytes_input.h"
#include "infer/tf_graph_def.h"

namespace ic {
namespace {

using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using tensorflow::NodeDef;

// The GraphDef producer version of TensorFlow 2.20, the release tests/interop checks the
// export against.
constexpr int kGraphDefProducer = 2288;

std::string output_name(const std::string& node, int k = 0) {
  return k == 0 ? node : node + ":" + std::to_string(k);
}
std::string tensor_name(const std::string& node, int k = 0) {
  return node + ":" + std::to_string(k);
}

// "InceptionV3/Conv2d_1a_3x3/BatchNorm" -> "InceptionV3/Conv2d_1a_3x3" (slim names the
// ReLU after a batch norm in the layer's scope).
std::string layer_scope(const std::string& name) {
  const std::string suffix = "/BatchNorm";
  if (name.size() > suffix.size() && name.ends_with(suffix))
    return name.substr(0, name.size() - suffix.size());
  return name;
}

std::vector<int64_t> nhwc(int64_t h, int64_t w) { return {1, h, w, 1}; }

const char* padding_name(Padding p) { return p == Padding::same ? "SAME" : "VALID"; }

class Translator {
 public:
  Translator(const Graph& graph, PreprocessOptions::Kind preprocessing)
      : graph_(graph), preprocessing_(preprocessing) {}

  Result<SavedModelGraph> run() {
    if (graph_.training) return error("the SavedModel export needs an inference graph");
    if (graph_.images == kNone || graph_.logits == kNone)
      return error("the graph has no images input or no logits");
    const Shape& images = graph_.values.at(graph_.images).shape;
    if (images.rank() != 4) return error("the images input is not NHWC: ", images.str());
    // `images` is fed directly (serving_default) or, when only `image_bytes` is fed
    // (classify), defaults to the JPEGs decoded and preprocessed inside the graph.
    PreprocessOptions eval;
    eval.kind = preprocessing_;
    eval.training = false;
    eval.height = static_cast<int>(images.h());
    eval.width = static_cast<int>(images.w());
    const ImageBytesInput jpegs = add_image_bytes_input(b_, eval);
    NodeDef* input = b_.add(kImagesInputKey, "PlaceholderWithDefault", {jpegs.images});
    set_type(input, "dtype", DT_FLOAT);
    set_shape(input, "shape", {-1, images.h(), images.w(), images.c()});
    tensors_[graph_.images] = input->name();

    const std::vector<bool> needed = nodes_needed();
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      if (!needed[i]) continue;
      const Node& node = graph_.nodes[i];
      for (ValueId v : node.inputs) {
        if (tensors_.count(v) == 0)
          return error("node ", node.name, " reads a value no earlier node produced");
      }
      Result<std::string> out =
          std::visit([&](const auto& desc) -> Result<std::string> { return translate(node, desc); },
                     node.desc);
      if (!out.ok())
        return error(node.name, " (", op_name(node.desc), "): ", out.status().message());
      tensors_[node.outputs.at(0)] = *out;
    }
    const std::string& logits = tensors_.at(graph_.logits);
    const int64_t classes = graph_.values.at(graph_.logits).shape.dims().back();
    NodeDef* argmax =
        b_.add("ArgMax", "ArgMax", {logits, b_.const_int32("ArgMax/dimension", {1}, true)});
    set_type(argmax, "T", DT_FLOAT);
    set_type(argmax, "Tidx", DT_INT32);
    set_type(argmax, "output_type", DT_INT64);
    NodeDef* softmax = b_.add("softmax_tensor", "Softmax", {logits});  // the reference's name
    set_type(softmax, "T", DT_FLOAT);

    // Names, not NodeDef pointers: the graph moves into the MetaGraphDef below.
    const std::string images_name = input->name(), classes_name = argmax->name(),
                      probabilities_name = softmax->name();
    add_saver();
    b_.graph().mutable_versions()->set_producer(kGraphDefProducer);

    SavedModelGraph out;
    out.saved_model.set_saved_model_schema_version(1);
    tensorflow::MetaGraphDef* meta = out.saved_model.add_meta_graphs();
    meta->mutable_meta_info_def()->set_meta_graph_version("inception.cpp");
    meta->mutable_meta_info_def()->add_tags(kServingTag);
    *meta->mutable_graph_def() = std::move(b_.graph());
    *meta->mutable_saver_def() = saver_;
    add_variable_collections(meta);

    tensorflow::SignatureDef& signature = (*meta->mutable_signature_def())[kServingSignatureKey];
    signature.set_method_name(kServingPredictMethod);
    tensorflow::TensorInfo& in = (*signature.mutable_inputs())[kImagesInputKey];
    in.set_name(tensor_name(images_name));
    in.set_dtype(DT_FLOAT);
    *in.mutable_tensor_shape() = shape_proto({-1, images.h(), images.w(), images.c()});
    tensorflow::TensorInfo& c = (*signature.mutable_outputs())[kClassesOutputKey];
    c.set_name(tensor_name(classes_name));
    c.set_dtype(DT_INT64);
    *c.mutable_tensor_shape() = shape_proto({-1});
    tensorflow::TensorInfo& p = (*signature.mutable_outputs())[kProbabilitiesOutputKey];
    p.set_name(tensor_name(probabilities_name));
    p.set_dtype(DT_FLOAT);
    *p.mutable_tensor_shape() = shape_proto({-1, classes});
    // classify: the same outputs from encoded JPEGs, as the reference's signature.
    tensorflow::SignatureDef from_jpegs = signature;  // copied before the map grows
    from_jpegs.mutable_inputs()->clear();
    tensorflow::TensorInfo& bytes = (*from_jpegs.mutable_inputs())[kImageBytesInputKey];
    bytes.set_name(tensor_name(jpegs.placeholder));
    bytes.set_dtype(DT_STRING);
    *bytes.mutable_tensor_shape() = shape_proto({-1});
    (*meta->mutable_signature_def())[kClassifySignatureKey] = std::move(from_jpegs);

    for (const Variable& v : variables_) out.variables.push_back(v.name);
    return out;
  }

 private:
  struct Variable {
    std::string name;    // TF-slim name: the key in variables/
    std::string handle;  // its VarHandleOp (the same name unless taken)
    std::string read;    // its ReadVariableOp
    std::string initial_value, initializer;
    std::vector<int64_t> shape;
    bool trainable = true;
  };

  // The nodes the logits depend on.
  std::vector<bool> nodes_needed() const {
    std::vector<bool> needed(graph_.nodes.size(), false);
    std::vector<ValueId> stack{graph_.logits};
    while (!stack.empty()) {
      const ValueId v = stack.back();
      stack.pop_back();
      const NodeId producer = graph_.values.at(v).producer;
      if (producer == kNone || needed[producer]) continue;
      needed[producer] = true;
      for (ValueId in : graph_.nodes[producer].inputs) stack.push_back(in);
    }
    return needed;
  }

  // The read of a parameter's variable, made on first use.
  std::string read(ParamId id) {
    auto found = variable_of_.find(id);
    if (found != variable_of_.end()) return variables_[found->second].read;
    const ParamInfo& param = graph_.params.at(id);
    Variable v;
    v.name = param.name;
    v.shape = param.shape.dims();
    v.trainable = param.trainable;
    NodeDef* handle = b_.add(param.name, "VarHandleOp");
    set_type(handle, "dtype", DT_FLOAT);
    set_shape(handle, "shape", v.shape);
    set_string(handle, "shared_name", handle->name());
    set_string(handle, "container", "");
    NodeDef* r =
        b_.add(handle->name() + "/Read/ReadVariableOp", "ReadVariableOp", {handle->name()});
    set_type(r, "dtype", DT_FLOAT);
    v.handle = handle->name();
    v.read = r->name();
    // Zeros as the initial value: serving restores every variable from variables/ instead.
    v.initial_value = b_.const_filled(handle->name() + "/Initializer/zeros", v.shape, 0.f);
    NodeDef* assign =
        b_.add(handle->name() + "/Assign", "AssignVariableOp", {handle->name(), v.initial_value});
    set_type(assign, "dtype", DT_FLOAT);
    v.initializer = assign->name();
    variable_of_[id] = variables_.size();
    variables_.push_back(std::move(v));
    return variables_.back().read;
  }

  std::string in(const Node& node, size_t k = 0) const { return tensors_.at(node.inputs.at(k)); }

  NodeDef* float_op(const std::string& name, const std::string& op,
                    const std::vector<std::string>& inputs) {
    NodeDef* n = b_.add(name, op, inputs);
    set_type(n, "T", DT_FLOAT);
    return n;
  }

  std::string relu(const std::string& name, const std::string& x) {
    return float_op(name, "Relu", {x})->name();
  }

  Result<std::string> translate(const Node& node, const Conv2dDesc& d) {
    if (node.params.size() != (d.has_bias ? 2u : 1u)) return error("unexpected parameters");
    // Depthwise: TensorFlow's own op, on the filter as [kh,kw,C,1] (a grouped-conv variable
    // [kh,kw,1,C] has the same bytes and is reshaped). Other groups: Conv2D, which reads the
    // group count from the filter's [kh,kw,Ci/G,Co].
    std::string filter = read(node.params[0]);
    const Shape& declared = graph_.params.at(static_cast<size_t>(node.params[0])).shape;
    const bool depthwise = d.depthwise();
    if (depthwise && declared.dims() != std::vector<int64_t>{d.kernel_h, d.kernel_w, d.groups, 1}) {
      NodeDef* reshaped = float_op(
          node.name + "/depthwise_filter", "Reshape",
          {filter, b_.const_int32(node.name + "/depthwise_filter/shape",
                                  {d.kernel_h, d.kernel_w, static_cast<int32_t>(d.groups), 1})});
      set_type(reshaped, "Tshape", DT_INT32);
      filter = reshaped->name();
    }
    NodeDef* conv = float_op(node.name + (depthwise ? "/depthwise" : "/Conv2D"),
                             depthwise ? "DepthwiseConv2dNative" : "Conv2D", {in(node), filter});
    set_ints(conv, "strides", nhwc(d.stride_h, d.stride_w));
    set_string(conv, "padding", padding_name(d.padding));
    set_string(conv, "data_format", "NHWC");
    set_ints(conv, "dilations", {1, 1, 1, 1});
    if (!d.has_bias) return conv->name();
    NodeDef* bias =
        float_op(node.name + "/BiasAdd", "BiasAdd", {conv->name(), read(node.params[1])});
    set_string(bias, "data_format", "NHWC");
    return bias->name();
  }

  Result<std::string> translate(const Node& node, const BatchNormDesc& d) {
    if (d.training) return error("batch norm in training mode has no serving translation");
    if (node.params.size() != (d.has_gamma ? 2u : 1u) || node.state.size() != 2)
      return error("unexpected parameters");
    const std::string beta = read(node.params[0]);
    // TF-slim's Inception batch norm has no gamma: a scale of ones.
    const std::string gamma = d.has_gamma
                                  ? read(node.params[1])
                                  : b_.const_filled(node.name + "/Const", {d.input.c()}, 1.f);
    NodeDef* bn = float_op(node.name + "/FusedBatchNormV3", "FusedBatchNormV3",
                           {in(node), gamma, beta, read(node.state[0]), read(node.state[1])});
    set_type(bn, "U", DT_FLOAT);
    set_float(bn, "epsilon", d.epsilon);
    set_string(bn, "data_format", "NHWC");
    set_bool(bn, "is_training", false);
    set_float(bn, "exponential_avg_factor", 1.f);
    if (!d.fused_relu) return bn->name();
    return relu(layer_scope(node.name) + "/Relu", bn->name());
  }

  Result<std::string> translate(const Node& node, const ReluDesc&) {
    return relu(node.name, in(node));
  }

  Result<std::string> translate(const Node& node, const Pool2dDesc& d) {
    NodeDef* pool =
        float_op(node.name, d.kind == PoolKind::max ? "MaxPool" : "AvgPool", {in(node)});
    set_ints(pool, "ksize", nhwc(d.kernel_h, d.kernel_w));
    set_ints(pool, "strides", nhwc(d.stride_h, d.stride_w));
    set_string(pool, "padding", padding_name(d.padding));
    set_string(pool, "data_format", "NHWC");
    return pool->name();
  }

  Result<std::string> translate(const Node& node, const GlobalAvgPoolDesc&) {
    NodeDef* mean = float_op(node.name, "Mean",
                             {in(node), b_.const_int32(node.name + "/reduction_indices", {1, 2})});
    set_type(mean, "Tidx", DT_INT32);
    set_bool(mean, "keep_dims", false);
    return mean->name();
  }

  Result<std::string> translate(const Node& node, const ConcatDesc& d) {
    std::vector<std::string> inputs;
    for (size_t k = 0; k < node.inputs.size(); ++k) inputs.push_back(in(node, k));
    inputs.push_back(b_.const_int32(node.name + "/axis", {3}, true));
    NodeDef* concat = float_op(node.name, "ConcatV2", inputs);
    set_int(concat, "N", static_cast<int64_t>(d.inputs.size()));
    set_type(concat, "Tidx", DT_INT32);
    return concat->name();
  }

  Result<std::string> translate(const Node& node, const DropoutDesc& d) {
    if (d.training) return error("dropout in training mode has no serving translation");
    return float_op(node.name, "Identity", {in(node)})->name();
  }

  Result<std::string> translate(const Node& node, const DenseDesc& d) {
    if (node.params.size() != (d.has_bias ? 2u : 1u)) return error("unexpected parameters");
    NodeDef* mm = float_op(node.name + "/MatMul", "MatMul", {in(node), read(node.params[0])});
    set_bool(mm, "transpose_a", false);
    set_bool(mm, "transpose_b", false);
    if (!d.has_bias) return mm->name();
    NodeDef* bias = float_op(node.name + "/BiasAdd", "BiasAdd", {mm->name(), read(node.params[1])});
    set_string(bias, "data_format", "NHWC");
    return bias->name();
  }

  Result<std::string> translate(const Node& node, const AddDesc& d) {
    NodeDef* add = float_op(node.name + "/add", "AddV2", {in(node, 0), in(node, 1)});
    if (!d.fused_relu) return add->name();
    return relu(node.name + "/Relu", add->name());
  }

  Result<std::string> translate(const Node& node, const ActivationDesc& d) {
    switch (d.function) {
      case Activation::relu6: return float_op(node.name, "Relu6", {in(node)})->name();
      case Activation::sigmoid: return float_op(node.name, "Sigmoid", {in(node)})->name();
      case Activation::swish: {
        NodeDef* gate = float_op(node.name + "/Sigmoid", "Sigmoid", {in(node)});
        return float_op(node.name + "/mul", "Mul", {in(node), gate->name()})->name();
      }
    }
    return error("unknown activation");
  }

  Result<std::string> translate(const Node& node, const ChannelScaleDesc& d) {
    NodeDef* factors =
        float_op(node.name + "/Reshape", "Reshape",
                 {in(node, 1), b_.const_int32(node.name + "/Reshape/shape",
                                              {-1, 1, 1, static_cast<int32_t>(d.input.c())})});
    set_type(factors, "Tshape", DT_INT32);
    return float_op(node.name + "/mul", "Mul", {in(node, 0), factors->name()})->name();
  }

  Result<std::string> translate(const Node& node, const PadDesc& d) {
    const Pads& p = d.pads;
    NodeDef* pad = float_op(
        node.name, "Pad",
        {in(node), b_.const_int32(node.name + "/paddings",
                                  {0, 0, p.top, p.bottom, p.left, p.right, 0, 0}, {4, 2})});
    set_type(pad, "Tpaddings", DT_INT32);
    return pad->name();
  }

  Result<std::string> translate(const Node&, const QuantizeDesc&) {
    return error("an int8 inference graph has no SavedModel translation (export the model graph)");
  }

  Result<std::string> translate(const Node&, const CastDesc&) {
    return error("a bf16 inference graph has no SavedModel translation (export the model graph)");
  }

  Result<std::string> translate(const Node&, const SoftmaxCrossEntropyDesc&) {
    return error("a loss has no serving translation (export an inference graph)");
  }

  Result<std::string> translate(const Node& node, const ReshapeDesc& d) {
    if (d.input.rank() == 0 || d.output.rank() == 0 || d.input[0] != d.output[0])
      return error("only reshapes that keep the batch dimension are exported, not ", d.input.str(),
                   " -> ", d.output.str());
    std::vector<int32_t> shape{-1};
    for (int axis = 1; axis < d.output.rank(); ++axis)
      shape.push_back(static_cast<int32_t>(d.output[axis]));
    NodeDef* reshape =
        float_op(node.name, "Reshape", {in(node), b_.const_int32(node.name + "/shape", shape)});
    set_type(reshape, "Tshape", DT_INT32);
    return reshape->name();
  }

  // tf.compat.v1.train.Saver's graph for resource variables, V2 format: the loader feeds the
  // variables path to save/Const and runs save/restore_all.
  void add_saver() {
    std::vector<std::string> names;
    std::vector<tensorflow::DataType> dtypes;
    for (const Variable& v : variables_) {
      names.push_back(v.name);
      dtypes.push_back(DT_FLOAT);
    }
    const std::vector<std::string> no_slices(variables_.size(), "");
    const std::string default_name = b_.const_strings("save/filename/input", {"model"}, true);
    NodeDef* filename = b_.add("save/Const", "PlaceholderWithDefault", {default_name});
    set_type(filename, "dtype", DT_STRING);
    set_shape(filename, "shape", {});

    std::vector<std::string> save_inputs{
        filename->name(), b_.const_strings("save/SaveV2/tensor_names", names),
        b_.const_strings("save/SaveV2/shape_and_slices", no_slices)};
    for (const Variable& v : variables_) save_inputs.push_back(v.read);
    NodeDef* save = b_.add("save/SaveV2", "SaveV2", save_inputs);
    set_types(save, "dtypes", dtypes);
    NodeDef* saved =
        b_.add("save/control_dependency", "Identity", {filename->name(), "^" + save->name()});
    set_type(saved, "T", DT_STRING);

    NodeDef* restore =
        b_.add("save/RestoreV2", "RestoreV2",
               {filename->name(), b_.const_strings("save/RestoreV2/tensor_names", names),
                b_.const_strings("save/RestoreV2/shape_and_slices", no_slices)});
    set_types(restore, "dtypes", dtypes);
    std::vector<std::string> assigns;
    for (size_t k = 0; k < variables_.size(); ++k) {
      NodeDef* assign =
          b_.add("save/AssignVariableOp", "AssignVariableOp",
                 {variables_[k].handle, output_name(restore->name(), static_cast<int>(k))});
      set_type(assign, "dtype", DT_FLOAT);
      assigns.push_back("^" + assign->name());
    }
    NodeDef* restore_all = b_.add("save/restore_all", "NoOp", assigns);

    saver_.set_filename_tensor_name(tensor_name(filename->name()));
    saver_.set_save_tensor_name(tensor_name(saved->name()));
    saver_.set_restore_op_name(restore_all->name());
    saver_.set_max_to_keep(5);
    saver_.set_keep_checkpoint_every_n_hours(10000.f);
    saver_.set_version(tensorflow::SaverDef::V2);
  }

  // tf.compat.v1's "variables" and "trainable_variables" collections: what lets
  // tf.saved_model.load lift the variables out of the imported graph.
  void add_variable_collections(tensorflow::MetaGraphDef* meta) const {
    auto& collections = *meta->mutable_collection_def();
    for (const Variable& v : variables_) {
      tensorflow::VariableDef def;
      def.set_variable_name(tensor_name(v.handle));
      def.set_initializer_name(v.initializer);
      def.set_snapshot_name(tensor_name(v.read));
      def.set_initial_value_name(tensor_name(v.initial_value));
      def.set_is_resource(true);
      def.set_trainable(v.trainable);
      const std::string bytes = def.SerializeAsString();
      collections["variables"].mutable_bytes_list()->add_value(bytes);
      if (v.trainable) collections["trainable_variables"].mutable_bytes_list()->add_value(bytes);
    }
  }

  const Graph& graph_;
  PreprocessOptions::Kind preprocessing_;
  TfGraphDefBuilder b_;
  std::map<ValueId, std::string> tensors_;  // our value -> its TF tensor
  std::map<ParamId, size_t> variable_of_;
  std::vector<Variable> variables_;
  tensorflow::SaverDef saver_;
};

}  // namespace

Result<SavedModelGraph> saved_model_graph(const Graph& graph,
                                          PreprocessOptions::Kind preprocessing) {
  return Translator(graph, preprocessing).run();
}

}  // namespace ic
