// export_onnx: the file of a tiny inception_v3, inception_v4 and resnet50 passes libonnx's
// checker and its strict shape inference, uses standard ops only with every batch norm folded,
// leaves the auxiliary head out and has the documented inputs and outputs; the folding
// arithmetic reproduces our own CPU inference of conv + batch norm; a bad path is an error
// naming it. An int8 model's export is QDQ: per quantized layer an int8 initializer equal to
// clamp(round(w / scale)) under a per-channel DequantizeLinear, and one Clip -> QuantizeLinear ->
// DequantizeLinear per (input value, scale). (ONNX Runtime runs the exported networks, float32
// and QDQ, in tests/interop/run.sh.)
#include "infer/onnx_export.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "graph/compiled_graph.h"
#include "graph/param_layout.h"
#include "infer/onnx_qdq.h"
#include "io/checkpoint_dir.h"
#include "runtime/inference_model.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ic_onnx_" + std::to_string(getpid()) + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// A step-1 checkpoint of `model` at its smallest image size with random values (positive
// moving variances), loaded back as the exporter sees it.
InferenceModel tiny_trained_model(const std::string& model, const std::string& dir) {
  CheckpointMeta meta{model, 7, 0, 0, 0.25, ""};
  ModelOptions options = inference_model_options(meta, 1).value();
  const int side = supported_image_sides(options).value().min;
  meta.height = meta.width = side;
  options = inference_model_options(meta, 1).value();
  const Graph graph = build_model(options).value();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<std::vector<float>> storage;
  std::vector<TensorView> views;
  storage.reserve(graph.params.size());
  for (const ParamInfo& p : graph.params) {
    std::vector<float>& values = storage.emplace_back(p.shape.numel());
    const bool variance = p.name.ends_with("moving_variance");
    for (float& v : values) v = variance ? 0.5f + std::abs(normal(rng)) : 0.3f * normal(rng);
    views.push_back({p.name, DType::f32, p.shape, values.data()});
  }
  static const int64_t step = 1;
  views.push_back({"global_step", DType::i64, Shape{}, &step});
  EXPECT_TRUE(save_checkpoint(dir, 1, checkpoint_metadata(meta), views).ok());
  Result<InferenceModel> loaded = load_for_inference(dir, "");
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return std::move(loaded).value();
}

onnx::ModelProto read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes.str())) << path;
  return m;
}

std::vector<std::string> dims(const onnx::ValueInfoProto& v) {
  std::vector<std::string> out;
  for (const auto& d : v.type().tensor_type().shape().dim())
    out.push_back(d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
  return out;
}

class OnnxExportModels : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxExportModels, PassesCheckerAndShapeInferenceWithTheDocumentedInterface) {
  const std::string dir = temp_dir(GetParam());
  const InferenceModel model = tiny_trained_model(GetParam(), dir);
  const std::string path = dir + "/model.onnx";
  const Status written = export_onnx(model, path);
  ASSERT_TRUE(written.ok()) << written.message();

  EXPECT_NO_THROW(onnx::checker::check_model(path));
  onnx::ModelProto m = read_model(path);
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).version(), kOnnxOpset);

  const std::string side = std::to_string(model.meta.height);
  ASSERT_EQ(m.graph().input_size(), 1);
  EXPECT_EQ(m.graph().input(0).name(), "images");
  EXPECT_EQ(dims(m.graph().input(0)), (std::vector<std::string>{"N", side, side, "3"}));
  ASSERT_EQ(m.graph().output_size(), 3);
  EXPECT_EQ(m.graph().output(0).name(), "probabilities");
  EXPECT_EQ(dims(m.graph().output(0)), (std::vector<std::string>{"N", "7"}));
  EXPECT_EQ(m.graph().output(1).name(), "classes");
  EXPECT_EQ(m.graph().output(1).type().tensor_type().elem_type(), onnx::TensorProto::INT64);
  EXPECT_EQ(m.graph().output(2).name(), "logits");

  const std::set<std::string> standard{
      "Transpose", "Conv",    "Relu", "MaxPool", "AveragePool", "Concat", "GlobalAveragePool",
      "Flatten",   "Reshape", "Gemm", "Add",     "Softmax",     "ArgMax", "Identity"};
  int convs = 0;
  for (const onnx::NodeProto& n : m.graph().node()) {
    EXPECT_TRUE(standard.count(n.op_type())) << n.op_type() << " " << n.name();
    EXPECT_EQ(n.name().find("AuxLogits"), std::string::npos) << n.name();
    convs += n.op_type() == "Conv";
    if (n.op_type() == "AveragePool") {
      bool excludes_pad = false;
      for (const auto& a : n.attribute())
        excludes_pad |= a.name() == "count_include_pad" && a.i() == 0;
      EXPECT_TRUE(excludes_pad) << n.name();
    }
  }
  // Every conv of the main network, and nothing else, is there (its batch norm folded in).
  const Graph graph = build_inference_graph(model, 1).value();
  int main_convs = 0;
  for (const Node& n : graph.nodes)
    main_convs +=
        std::holds_alternative<Conv2dDesc>(n.desc) && n.name.find("AuxLogits") == std::string::npos;
  EXPECT_EQ(convs, main_convs);
  for (const onnx::TensorProto& t : m.graph().initializer())
    EXPECT_TRUE(t.has_raw_data()) << t.name();

  // Strict shape inference must agree with the declared outputs (it throws on a conflict).
  EXPECT_NO_THROW(onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1, false)));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(All, OnnxExportModels,
                         ::testing::Values("inception_v3", "inception_v4", "resnet50"));

TEST(OnnxExport, UnwritablePathIsAnErrorNamingIt) {
  const std::string dir = temp_dir("badpath");
  const InferenceModel model = tiny_trained_model("inception_v3", dir);
  const std::string path = dir + "/no/such/dir/model.onnx";
  const Status written = export_onnx(model, path);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find(path), std::string::npos) << written.message();
  fs::remove_all(dir);
}

TEST(OnnxExport, MissingTensorIsAnErrorNamingItAndWritesNothing) {
  const std::string dir = temp_dir("missing");
  InferenceModel model = tiny_trained_model("resnet50", dir);
  const std::string missing =
      "resnet_v1_50/block2/unit_1/bottleneck_v1/conv2/BatchNorm/moving_variance";
  ASSERT_EQ(model.weights.erase(missing), 1u);
  const std::string path = dir + "/model.onnx";
  const Status written = export_onnx(model, path);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find(missing), std::string::npos) << written.message();
  EXPECT_NE(written.message().find(model.checkpoint), std::string::npos) << written.message();
  EXPECT_FALSE(fs::exists(path));
  fs::remove_all(dir);
}

// conv 3x3 stride 2 SAME (asymmetric TensorFlow padding) + batch norm with gamma on our CPU
// backend against a direct convolution with fold_conv's weights and bias.
TEST(OnnxExport, FoldedConvMatchesOurConvPlusBatchNorm) {
  const int64_t batch = 2, side = 8, ci = 3, co = 4;
  GraphBuilder b(/*training=*/false);
  const ValueId images = b.images(Shape{batch, side, side, ci});
  GraphBuilder::ConvOptions c;
  c.filters = co;
  c.kernel_h = c.kernel_w = 3;
  c.stride = 2;
  ValueId x = b.conv2d(images, c, "Net/Conv");
  GraphBuilder::BatchNormOptions bn;
  bn.gamma = true;
  x = b.batch_norm(x, bn, "Net/Conv");
  const Shape y_shape = b.shape(x);
  b.set_logits(b.reshape(x, Shape{batch, y_shape.numel() / batch}, "Net/Flatten"));
  const Graph graph = b.finish();

  auto backend = make_cpu_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  const ParamLayout layout = ParamLayout::plan(graph);
  DeviceBuffer weights = std::move((*backend)->allocate(layout.trainable_count * 4)).value();
  DeviceBuffer state = std::move((*backend)->allocate(layout.state_count * 4)).value();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::map<std::string, const float*> by_name;
  for (size_t p = 0; p < graph.params.size(); ++p) {
    const ParamInfo& info = graph.params[p];
    float* base = (info.trainable ? weights.as<float>() : state.as<float>()) + layout.offset[p];
    const bool variance = info.name.ends_with("moving_variance");
    for (int64_t e = 0; e < info.shape.numel(); ++e)
      base[e] = variance ? 0.2f + std::abs(normal(rng)) : normal(rng);
    by_name[info.name] = base;
  }
  auto compiled = CompiledGraph::compile(
      graph, **backend, layout, ParamBinding{weights.as<float>(), state.as<float>(), nullptr});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  CompiledGraph& cg = **compiled;
  const int64_t image_numel = batch * side * side * ci;
  std::vector<float> image(static_cast<size_t>(image_numel));
  for (float& v : image) v = normal(rng);
  std::copy(image.begin(), image.end(), cg.images());
  cg.forward(StepContext{});
  const float* ours = cg.logits();

  const Conv2dDesc& conv = std::get<Conv2dDesc>(graph.nodes.at(0).desc);
  const BatchNormValues values{by_name.at("Net/Conv/BatchNorm/beta"),
                               by_name.at("Net/Conv/BatchNorm/gamma"),
                               by_name.at("Net/Conv/BatchNorm/moving_mean"),
                               by_name.at("Net/Conv/BatchNorm/moving_variance"), bn.epsilon};
  const FoldedConv f = fold_conv(conv, by_name.at("Net/Conv/weights"), nullptr, &values);
  const Pads pads = tf_pads(side, side, 3, 3, 2, 2, Padding::same);
  EXPECT_EQ(pads.top, 0);  // the smaller half before: SAME 8 -> 4 pads 0 before, 1 after
  EXPECT_EQ(pads.bottom, 1);
  double worst = 0;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t oy = 0; oy < y_shape.h(); ++oy)
      for (int64_t ox = 0; ox < y_shape.w(); ++ox)
        for (int64_t o = 0; o < co; ++o) {
          double sum = f.bias[static_cast<size_t>(o)];
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy * 2 + ky - pads.top, ix = ox * 2 + kx - pads.left;
              if (iy < 0 || ix < 0 || iy >= side || ix >= side) continue;
              for (int64_t i = 0; i < ci; ++i)
                sum += f.weights[static_cast<size_t>(((o * ci + i) * 3 + ky) * 3 + kx)] *
                       image[static_cast<size_t>(((n * side + iy) * side + ix) * ci + i)];
            }
          const float got = ours[((n * y_shape.h() + oy) * y_shape.w() + ox) * co + o];
          worst = std::max(worst, std::abs(sum - got));
        }
  EXPECT_LT(worst, 1e-4) << "folded conv differs from conv + batch norm by " << worst;
}

}  // namespace
}  // namespace ic

namespace ic {
namespace {

void set_floats(TensorEntry& t, const std::vector<float>& values) {
  ASSERT_EQ(t.bytes.size(), values.size() * sizeof(float)) << t.name;
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
}

// A tiny model made an int8 model as the int8 export writes one: every convolution and dense
// layer of the main network except those reading the images gets per-channel scales, its
// weights become q · scale for random q in [-127, 127] (127 or -127 once per channel), and its
// batch norm the identity
// (mean 0, variance 1 - epsilon, gamma 1). The input scale depends on the value read only, so the
// layers reading one value share one QuantizeLinear. `expected_q` gets each layer's q in ONNX's
// layout (OIHW for Conv, [in,out] for Gemm).
struct Int8Model {
  InferenceModel model;
  std::map<std::string, std::vector<int8_t>> expected_q;
  size_t distinct_inputs = 0;  // (value, scale) pairs the quantized layers read
};

Int8Model tiny_int8_model(const std::string& name, const std::string& dir) {
  Int8Model out{tiny_trained_model(name, dir), {}, 0};
  InferenceModel& model = out.model;
  const Graph graph = build_inference_graph(model, 1).value();
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> level(-kInt8WeightMax, kInt8WeightMax);
  std::uniform_real_distribution<float> scale(1e-3f, 1e-2f);
  QuantizationTable table;
  std::set<ValueId> inputs;
  for (const Node& n : graph.nodes) {
    const auto* conv = std::get_if<Conv2dDesc>(&n.desc);
    const auto* dense = std::get_if<DenseDesc>(&n.desc);
    if ((conv == nullptr && dense == nullptr) || n.inputs.at(0) == graph.images ||
        n.name.find("AuxLogits") != std::string::npos)
      continue;
    const int64_t co = conv ? conv->out_channels : dense->out_features;
    TensorEntry& w = model.weights.at(graph.params.at(static_cast<size_t>(n.params.at(0))).name);
    const size_t count = w.bytes.size() / sizeof(float);
    LayerQuantization layer;
    layer.input_scale = 0.01f * static_cast<float>(1 + n.inputs.at(0) % 7);
    for (int64_t c = 0; c < co; ++c) layer.weight_scales.push_back(scale(rng));
    std::vector<int8_t> q(count);  // HWIO or [in,out]: the channel innermost
    std::vector<float> values(count);
    for (size_t k = 0; k < count; ++k) {
      // Each channel's largest |q| is 127, as in an int8 export (scale = max |w| / 127).
      q[k] = static_cast<int8_t>(k < static_cast<size_t>(co) ? (k % 2 ? -127 : 127) : level(rng));
      values[k] = static_cast<float>(q[k]) * layer.weight_scales[k % static_cast<size_t>(co)];
    }
    set_floats(w, values);
    if (conv != nullptr) {
      const int64_t per_channel = static_cast<int64_t>(count) / co;
      std::vector<int8_t> oihw(count);
      const int64_t ci = conv->input.c(), taps = conv->kernel_h * conv->kernel_w;
      for (int64_t o = 0; o < co; ++o)
        for (int64_t i = 0; i < ci; ++i)
          for (int64_t t = 0; t < taps; ++t)
            oihw[static_cast<size_t>(o * per_channel + i * taps + t)] =
                q[static_cast<size_t>((t * ci + i) * co + o)];
      out.expected_q[n.name] = oihw;
    } else {
      out.expected_q[n.name] = q;
    }
    // Its batch norm as the identity.
    for (const Node& bn : graph.nodes) {
      const auto* d = std::get_if<BatchNormDesc>(&bn.desc);
      if (d == nullptr || bn.inputs.at(0) != n.outputs.at(0)) continue;
      auto state = [&](size_t k) -> TensorEntry& {
        return model.weights.at(graph.params.at(static_cast<size_t>(bn.state.at(k))).name);
      };
      set_floats(state(0), std::vector<float>(static_cast<size_t>(co), 0.f));
      set_floats(state(1), std::vector<float>(static_cast<size_t>(co), 1.f - d->epsilon));
      if (d->has_gamma)  // ResNet's
        set_floats(model.weights.at(graph.params.at(static_cast<size_t>(bn.params.at(1))).name),
                   std::vector<float>(static_cast<size_t>(co), 1.f));
    }
    inputs.insert(n.inputs.at(0));
    table.layers[n.name] = std::move(layer);
  }
  out.distinct_inputs = inputs.size();
  table.calibration_images = 4;
  model.int8 = std::move(table);
  return out;
}

template <typename T>
std::vector<T> raw_values(const onnx::TensorProto& t) {
  std::vector<T> out(t.raw_data().size() / sizeof(T));
  std::memcpy(out.data(), t.raw_data().data(), out.size() * sizeof(T));
  return out;
}

class OnnxQdqExport : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxQdqExport, QuantizedLayersReadInt8WeightsAndSharedQuantizeLinears) {
  const std::string dir = temp_dir("qdq_" + GetParam());
  const Int8Model int8 = tiny_int8_model(GetParam(), dir);
  const QuantizationTable& table = *int8.model.int8;
  ASSERT_FALSE(table.layers.empty());
  const std::string path = dir + "/model.onnx";
  const Status written = export_onnx(int8.model, path);
  ASSERT_TRUE(written.ok()) << written.message();

  const onnx::ModelProto m = read_model(path);
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  onnx::ModelProto inferred = m;
  EXPECT_NO_THROW(onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1, false)));
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_GE(m.opset_import(0).version(), 13);  // per-axis DequantizeLinear

  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const onnx::TensorProto& t : m.graph().initializer()) initializers[t.name()] = &t;
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, int> count_by_op;
  for (const onnx::NodeProto& n : m.graph().node()) {
    for (const std::string& o : n.output()) producer[o] = &n;
    ++count_by_op[n.op_type()];
  }
  auto produced_by = [&](const std::string& tensor, const std::string& op) {
    auto it = producer.find(tensor);
    EXPECT_TRUE(it != producer.end() && it->second->op_type() == op) << tensor << " from " << op;
    return it != producer.end() && it->second->op_type() == op ? it->second : nullptr;
  };
  auto scalar = [&](const std::string& name) {
    EXPECT_TRUE(initializers.count(name)) << name;
    return initializers.count(name) ? initializers.at(name) : nullptr;
  };

  size_t quantized_layers = 0;
  for (const onnx::NodeProto& n : m.graph().node()) {
    auto entry = table.layers.find(n.name());
    if (entry == table.layers.end() || (n.op_type() != "Conv" && n.op_type() != "Gemm")) continue;
    ++quantized_layers;
    const LayerQuantization& layer = entry->second;
    const int64_t axis = n.op_type() == "Conv" ? 0 : 1;
    // The weights: DequantizeLinear(int8 q, scales, int8 zeros, axis).
    const onnx::NodeProto* wdq = produced_by(n.input(1), "DequantizeLinear");
    ASSERT_NE(wdq, nullptr) << n.name();
    ASSERT_EQ(wdq->attribute_size(), 1);
    EXPECT_EQ(wdq->attribute(0).name(), "axis");
    EXPECT_EQ(wdq->attribute(0).i(), axis) << n.name();
    const onnx::TensorProto* q = scalar(wdq->input(0));
    const onnx::TensorProto* scales = scalar(wdq->input(1));
    const onnx::TensorProto* zeros = scalar(wdq->input(2));
    ASSERT_TRUE(q && scales && zeros) << n.name();
    EXPECT_EQ(q->data_type(), onnx::TensorProto::INT8);
    const std::vector<int8_t>& expected = int8.expected_q.at(n.name());
    EXPECT_EQ(raw_values<int8_t>(*q), expected) << n.name();
    int64_t numel = 1;
    for (int64_t d : q->dims()) numel *= d;
    EXPECT_EQ(numel, static_cast<int64_t>(expected.size())) << n.name();
    // The export's scales are those of the folded weights (q · scale times the identity batch
    // norm's 1/sqrt(1 - eps + eps)): the table's within a rounding.
    const std::vector<float> got_scales = raw_values<float>(*scales);
    ASSERT_EQ(got_scales.size(), layer.weight_scales.size()) << n.name();
    for (size_t c = 0; c < got_scales.size(); ++c)
      EXPECT_NEAR(got_scales[c], layer.weight_scales[c], 1e-6 * layer.weight_scales[c]) << n.name();
    EXPECT_EQ(zeros->data_type(), onnx::TensorProto::INT8);
    EXPECT_EQ(raw_values<int8_t>(*zeros), std::vector<int8_t>(layer.weight_scales.size(), 0));

    // The input: DequantizeLinear(QuantizeLinear(Clip(x, 0, 127 s), s, uint8 0), s, 0).
    const onnx::NodeProto* dq = produced_by(n.input(0), "DequantizeLinear");
    ASSERT_NE(dq, nullptr) << n.name();
    const onnx::NodeProto* qn = produced_by(dq->input(0), "QuantizeLinear");
    ASSERT_NE(qn, nullptr) << n.name();
    EXPECT_EQ(qn->input(1), dq->input(1));
    EXPECT_EQ(qn->input(2), dq->input(2));
    const onnx::TensorProto* s = scalar(qn->input(1));
    const onnx::TensorProto* zp = scalar(qn->input(2));
    ASSERT_TRUE(s && zp);
    EXPECT_EQ(s->dims_size(), 0);
    EXPECT_EQ(raw_values<float>(*s), std::vector<float>{layer.input_scale}) << n.name();
    EXPECT_EQ(zp->data_type(), onnx::TensorProto::UINT8);
    EXPECT_EQ(raw_values<uint8_t>(*zp), std::vector<uint8_t>{0});
    const onnx::NodeProto* clip = produced_by(qn->input(0), "Clip");
    ASSERT_NE(clip, nullptr) << n.name();
    ASSERT_EQ(clip->input_size(), 3);
    EXPECT_EQ(raw_values<float>(*scalar(clip->input(1))), std::vector<float>{0.f});
    EXPECT_EQ(raw_values<float>(*scalar(clip->input(2))),
              std::vector<float>{activation_clip_max(layer.input_scale)});
  }
  EXPECT_EQ(quantized_layers, table.layers.size());
  // One chain per (value, scale), however many layers read it.
  EXPECT_EQ(static_cast<size_t>(count_by_op["QuantizeLinear"]), int8.distinct_inputs);
  EXPECT_EQ(static_cast<size_t>(count_by_op["Clip"]), int8.distinct_inputs);
  EXPECT_EQ(static_cast<size_t>(count_by_op["DequantizeLinear"]),
            int8.distinct_inputs + table.layers.size());
  EXPECT_LT(int8.distinct_inputs, table.layers.size());  // the blocks' branches share inputs
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(All, OnnxQdqExport,
                         ::testing::Values("inception_v3", "inception_v4", "resnet50"));

TEST(OnnxInt8Export, FloatExportHasNoQuantizeLinear) {
  const std::string dir = temp_dir("qdq_float");
  const InferenceModel model = tiny_trained_model("inception_v3", dir);
  ASSERT_TRUE(export_onnx(model, dir + "/model.onnx").ok());
  const onnx::ModelProto m = read_model(dir + "/model.onnx");
  for (const onnx::NodeProto& n : m.graph().node())
    EXPECT_TRUE(n.op_type().find("QuantizeLinear") == std::string::npos && n.op_type() != "Clip")
        << n.name();
  fs::remove_all(dir);
}

TEST(OnnxInt8Export, TableThatDoesNotFitIsAnErrorNamingTheLayer) {
  const std::string dir = temp_dir("qdq_bad");
  Int8Model int8 = tiny_int8_model("inception_v3", dir);
  const std::string layer = int8.model.int8->layers.begin()->first;
  int8.model.int8->layers.begin()->second.weight_scales.pop_back();
  Status written = export_onnx(int8.model, dir + "/a.onnx");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find(layer), std::string::npos) << written.message();
  EXPECT_NE(written.message().find("weight scales"), std::string::npos) << written.message();

  int8.model.int8->layers["InceptionV3/NoSuchLayer"] = LayerQuantization{0.1f, {1.f}};
  written = export_onnx(int8.model, dir + "/b.onnx");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("InceptionV3/NoSuchLayer"), std::string::npos)
      << written.message();
  EXPECT_FALSE(fs::exists(dir + "/a.onnx"));
  EXPECT_FALSE(fs::exists(dir + "/b.onnx"));
  fs::remove_all(dir);
}

TEST(OnnxQdq, QuantizeWeightsRoundsHalfEvenAndClampsPerChannel) {
  // Two channels, scales 0.5 and 2: outer (OIHW, channel-major) and inner ([in,out]) layouts.
  const std::vector<float> scales{0.5f, 2.f};
  const std::vector<float> outer{0.25f, -0.75f, 100.f, 3.f, -5.f, 1000.f};
  EXPECT_EQ(quantize_weights(outer, scales, ChannelAxis::outer),
            (std::vector<int8_t>{0, -2, 127, 2, -2, 127}));
  const std::vector<float> inner{0.25f, 3.f, -0.75f, -5.f, -100.f, 1000.f};
  EXPECT_EQ(quantize_weights(inner, scales, ChannelAxis::inner),
            (std::vector<int8_t>{0, 2, -2, -2, -127, 127}));
  EXPECT_FLOAT_EQ(activation_clip_max(0.5f), 63.5f);
}

}  // namespace
}  // namespace ic
