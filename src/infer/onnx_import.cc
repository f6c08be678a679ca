#include "infer/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "io/file_system.h"
#include "runtime/checkpoint_checks.h"

namespace ic {

namespace {

// Protobuf's own limit on one message.
constexpr uint64_t kMaxOnnxBytes = uint64_t{2} << 30;

// The value of a stored digit string, or -1 when it is not one.
int64_t digits_value(const std::string& text) {
  if (text.empty() || text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(text);
}

// The values of float initializers by name, checked against the element counts the graph
// asks for as they are looked up.
class Initializers {
 public:
  Initializers(const onnx::GraphProto& graph, std::string path) : path_(std::move(path)) {
    for (const onnx::TensorProto& t : graph.initializer()) by_name_.emplace(t.name(), &t);
  }
  bool has(const std::string& name) const { return by_name_.count(name) != 0; }
  Result<std::vector<float>> floats(const std::string& name, int64_t numel) const {
    auto found = by_name_.find(name);
    if (found == by_name_.end()) return data_loss(path_, ": no initializer ", name);
    const onnx::TensorProto& t = *found->second;
    if (t.data_type() != onnx::TensorProto::FLOAT || !t.has_raw_data() ||
        t.raw_data().size() != static_cast<size_t>(numel) * sizeof(float))
      return data_loss(path_, ": initializer ", name, " is not ", numel, " raw float32 values");
    std::vector<float> values(static_cast<size_t>(numel));
    std::memcpy(values.data(), t.raw_data().data(), t.raw_data().size());
    return values;
  }

 private:
  std::string path_;
  std::map<std::string, const onnx::TensorProto*> by_name_;
};

class Rebuilder {
 public:
  Rebuilder(const Graph& graph, const Initializers& init) : graph_(graph), init_(init) {}

  Status run() {
    std::map<ValueId, size_t> producer;
    for (size_t k = 0; k < graph_.nodes.size(); ++k)
      for (ValueId o : graph_.nodes[k].outputs) producer[o] = k;
    for (const Node& n : graph_.nodes) {
      if (const auto* conv = std::get_if<Conv2dDesc>(&n.desc)) {
        IC_RETURN_IF_ERROR(conv_weights(n, *conv));
      } else if (const auto* bn = std::get_if<BatchNormDesc>(&n.desc)) {
        if (init_.has(n.name + "/moving_mean")) {
          IC_RETURN_IF_ERROR(batch_norm(n, *bn));
        } else {
          IC_RETURN_IF_ERROR(folded_batch_norm(n, *bn, graph_.nodes.at(producer.at(n.inputs[0]))));
        }
      } else if (const auto* dense = std::get_if<DenseDesc>(&n.desc)) {
        const int64_t k = dense->in_features, m = dense->out_features;
        IC_RETURN_IF_ERROR(set(n.params.at(0), n.name + "/weights", k * m));
        if (dense->has_bias) IC_RETURN_IF_ERROR(set(n.params.at(1), n.name + "/biases", m));
      }
    }
    // A convolution whose batch norm was not folded keeps the export's bias as its own.
    for (const Node& n : graph_.nodes) {
      const auto* conv = std::get_if<Conv2dDesc>(&n.desc);
      if (conv == nullptr || !conv->has_bias || values_.count(n.params.at(1))) continue;
      IC_RETURN_IF_ERROR(set(n.params.at(1), n.name + "/biases", conv->out_channels));
    }
    return Status();
  }

  std::map<ParamId, std::vector<float>>& values() { return values_; }

 private:
  Status set(ParamId id, const std::string& initializer, int64_t numel) {
    IC_ASSIGN_OR_RETURN(values_[id], init_.floats(initializer, numel));
    return Status();
  }
  void fill(ParamId id, int64_t numel, float value) {
    values_[id].assign(static_cast<size_t>(numel), value);
  }

  // ONNX's [Co, Ci/groups, kh, kw] back to our HWIO.
  Status conv_weights(const Node& n, const Conv2dDesc& conv) {
    const int64_t co = conv.out_channels, ci = conv.in_channels_per_group();
    const int64_t kh = conv.kernel_h, kw = conv.kernel_w;
    IC_ASSIGN_OR_RETURN(std::vector<float> oihw,
                        init_.floats(n.name + "/weights", co * ci * kh * kw));
    std::vector<float>& hwio = values_[n.params.at(0)];
    hwio.resize(oihw.size());
    for (int64_t o = 0; o < co; ++o)
      for (int64_t i = 0; i < ci; ++i)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t x = 0; x < kw; ++x)
            hwio[static_cast<size_t>(((y * kw + x) * ci + i) * co + o)] =
                oihw[static_cast<size_t>(((o * ci + i) * kh + y) * kw + x)];
    return Status();
  }

  Status batch_norm(const Node& n, const BatchNormDesc& bn) {
    const int64_t c = bn.input.c();
    IC_RETURN_IF_ERROR(set(n.params.at(0), n.name + "/beta", c));
    if (bn.has_gamma) IC_RETURN_IF_ERROR(set(n.params.at(1), n.name + "/gamma", c));
    IC_RETURN_IF_ERROR(set(n.state.at(0), n.name + "/moving_mean", c));
    return set(n.state.at(1), n.name + "/moving_variance", c);
  }

  // The identity batch norm after a convolution the export folded: variance + epsilon is 1 to
  // a float's rounding, so the inference graph's folding gives back the export's values.
  Status folded_batch_norm(const Node& n, const BatchNormDesc& bn, const Node& conv_node) {
    const int64_t c = bn.input.c();
    if (!std::holds_alternative<Conv2dDesc>(conv_node.desc))
      return data_loss("batch norm ", n.name, " has neither its own values nor a convolution");
    IC_RETURN_IF_ERROR(set(n.params.at(0), conv_node.name + "/biases", c));
    if (bn.has_gamma) fill(n.params.at(1), c, 1.f);
    fill(n.state.at(0), c, 0.f);
    fill(n.state.at(1), c, static_cast<float>(1.0 - static_cast<double>(bn.epsilon)));
    const auto& conv = std::get<Conv2dDesc>(conv_node.desc);
    if (conv.has_bias) fill(conv_node.params.at(1), c, 0.f);  // now in beta
    return Status();
  }

  const Graph& graph_;
  const Initializers& init_;
  std::map<ParamId, std::vector<float>> values_;
};

const char* kServableHere =
    "serve loads a training model_dir's checkpoints and export_model's exports "
    "(model.safetensors, saved_model.pb with variables/, model.onnx)";

}  // namespace

Result<InferenceModel> read_onnx_export(const std::string& path) {
  IC_ASSIGN_OR_RETURN(std::string bytes, read_file_to_string(path, kMaxOnnxBytes));
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) return data_loss(path, ": not an ONNX model");
  std::map<std::string, std::string> props;
  for (const onnx::StringStringEntryProto& e : m.metadata_props()) props[e.key()] = e.value();
  if (m.producer_name() != "inception.cpp" || !props.count("model") ||
      !props.count("num_classes") || !props.count("image_size"))
    return invalid_argument(path,
                            ": an ONNX model that export_model did not write (no inception.cpp "
                            "metadata: model, num_classes, image_size); ",
                            kServableHere);
  if (props.count("quantization"))
    return invalid_argument(path,
                            ": an int8 (QDQ) ONNX export; its model.safetensors next to it is "
                            "what serve loads");

  InferenceModel model;
  model.checkpoint = path;
  model.meta.model = props["model"];
  const int64_t classes = digits_value(props["num_classes"]);
  const std::string& size = props["image_size"];
  const size_t x = size.find('x');
  const int64_t height = x == std::string::npos ? -1 : digits_value(size.substr(0, x));
  const int64_t width = x == std::string::npos ? -1 : digits_value(size.substr(x + 1));
  const int64_t step = digits_value(props["global_step"]);
  if (classes < 0 || height < 0 || width < 0 || step < 0 || height > 1 << 16 || width > 1 << 16)
    return data_loss(path, ": malformed metadata (num_classes \"", props["num_classes"],
                     "\", image_size \"", size, "\", global_step \"", props["global_step"], "\")");
  model.meta.num_classes = classes;
  model.meta.height = static_cast<int>(height);
  model.meta.width = static_cast<int>(width);
  model.global_step = step;
  // Older exports do not record it; the graph's shapes then tell (a mismatch fails below).
  model.meta.depth_multiplier = 1.0;
  if (props.count("depth_multiplier")) {
    char* end = nullptr;
    model.meta.depth_multiplier = std::strtod(props["depth_multiplier"].c_str(), &end);
    if (end == props["depth_multiplier"].c_str() || *end != '\0')
      return data_loss(path, ": malformed depth_multiplier \"", props["depth_multiplier"], "\"");
  }
  if (props.count("preprocessing")) {  // older exports were all Inception-preprocessed
    IC_ASSIGN_OR_RETURN(model.meta.preprocessing,
                        parse_preprocessing(props["preprocessing"], path));
  }
  IC_RETURN_IF_ERROR(check_checkpoint_meta(model.meta, path));
  IC_ASSIGN_OR_RETURN(model.options, inference_model_options(model.meta, 1));
  model.options.aux_logits = false;  // the export holds only what the logits need
  IC_ASSIGN_OR_RETURN(Graph graph, build_model(model.options));

  const Initializers init(m.graph(), path);
  Rebuilder rebuilder(graph, init);
  IC_RETURN_IF_ERROR(rebuilder.run().with_context("reading ONNX export " + path));
  for (size_t id = 0; id < graph.params.size(); ++id) {
    const ParamInfo& param = graph.params[id];
    auto found = rebuilder.values().find(static_cast<ParamId>(id));
    if (found == rebuilder.values().end())
      return data_loss(path, ": the ONNX model holds no value for ", param.name);
    if (found->second.size() != static_cast<size_t>(param.shape.numel()))
      return data_loss(path, ": ", param.name, " has ", found->second.size(), " values, the model ",
                       "needs ", param.shape.str());
    TensorEntry entry{param.name, DType::f32, param.shape, std::string()};
    entry.bytes.assign(reinterpret_cast<const char*>(found->second.data()),
                       found->second.size() * sizeof(float));
    model.weights.emplace(param.name, std::move(entry));
  }
  CheckpointContents values;
  for (const auto& [name, entry] : model.weights) values.tensors.push_back(entry);
  IC_RETURN_IF_ERROR(check_checkpoint_values(values, path));
  return model;
}

Result<InferenceModel> load_servable_model(const std::string& model_dir,
                                           const std::string& checkpoint) {
  IC_ASSIGN_OR_RETURN(std::string path, resolve_checkpoint(model_dir, checkpoint));
  if (base_name(path) == "model.onnx") return read_onnx_export(path);
  return load_for_inference("", path);
}

}  // namespace ic
