// export_onnx: the file of a tiny inception_v3, inception_v4 and resnet50 passes libonnx's
// checker and its strict shape inference, uses standard ops only with every batch norm folded,
// leaves the auxiliary head out and has the documented inputs and outputs; the folding
// arithmetic reproduces our own CPU inference of conv + batch norm; a bad path is an error
// naming it. (ONNX Runtime runs the exported networks in tests/interop/run.sh.)
#include "infer/onnx_export.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "graph/compiled_graph.h"
#include "graph/param_layout.h"
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
