// The SavedModel export read back with our own protobuf definitions and bundle reader, for
// each model: saved_model.pb parses, its graph is well formed (unique node names, every input
// names a node, only ops we mean to emit), the signatures' tensors resolve to the right
// nodes, the SaverDef names real nodes, and variables/ holds every variable the graph reads
// with the InferenceModel's values bit for bit. tests/interop/run.sh has TensorFlow run it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/temp_dir_test_util.h"
#include "infer/model_export.h"
#include "infer/random_checkpoint_test_util.h"
#include "infer/saved_model_graph.h"
#include "io/checkpoint_dir.h"
#include "io/tensor_bundle.h"
#include "proto/saved_model.pb.h"
#include "runtime/inference_model.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

// A step-5 checkpoint of `model` with random raw weights, EMA shadows and statistics in `dir`.
void write_random_checkpoint(const std::string& dir, const std::string& model, int size,
                             double depth) {
  testing::write_random_checkpoint(
      dir, {.model = model, .image_size = size, .depth_multiplier = depth, .step = 5, .seed = 11});
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// "node", "node:1", "^node" -> "node".
std::string node_of(const std::string& input) {
  std::string name = input[0] == '^' ? input.substr(1) : input;
  return name.substr(0, name.find(':'));
}

void check_export(const std::string& model_name, int size, double depth) {
  SCOPED_TRACE(model_name);
  const testing::TempDir temp("saved_model_");
  const std::string& model_dir = temp.path();
  write_random_checkpoint(model_dir, model_name, size, depth);
  Result<InferenceModel> model = load_for_inference(model_dir, "");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<std::string> exported =
      export_trained_model(*model, model_dir + "/export", ExportFormat::saved_model);
  ASSERT_TRUE(exported.ok()) << exported.status().message();

  tensorflow::SavedModel saved;
  ASSERT_TRUE(saved.ParseFromString(read_bytes(*exported + "/saved_model.pb")));
  EXPECT_EQ(saved.saved_model_schema_version(), 1);
  ASSERT_EQ(saved.meta_graphs_size(), 1);
  const tensorflow::MetaGraphDef& meta = saved.meta_graphs(0);
  ASSERT_EQ(meta.meta_info_def().tags_size(), 1);
  EXPECT_EQ(meta.meta_info_def().tags(0), "serve");

  std::map<std::string, const tensorflow::NodeDef*> nodes;
  const std::set<std::string> ops_we_emit = {"Placeholder",
                                             "Const",
                                             "VarHandleOp",
                                             "ReadVariableOp",
                                             "AssignVariableOp",
                                             "Conv2D",
                                             "BiasAdd",
                                             "FusedBatchNormV3",
                                             "Relu",
                                             "MaxPool",
                                             "AvgPool",
                                             "Mean",
                                             "ConcatV2",
                                             "Identity",
                                             "MatMul",
                                             "AddV2",
                                             "Reshape",
                                             "ArgMax",
                                             "Softmax",
                                             "PlaceholderWithDefault",
                                             "SaveV2",
                                             "RestoreV2",
                                             "NoOp",
                                             "Size",
                                             "While"};
  for (const tensorflow::NodeDef& node : meta.graph_def().node()) {
    EXPECT_TRUE(nodes.emplace(node.name(), &node).second) << "duplicate node " << node.name();
    EXPECT_EQ(ops_we_emit.count(node.op()), 1u) << node.name() << ": " << node.op();
    EXPECT_EQ(node.name().find("AuxLogits"), std::string::npos) << node.name();
  }
  for (const tensorflow::NodeDef& node : meta.graph_def().node()) {
    for (const std::string& input : node.input())
      EXPECT_EQ(nodes.count(node_of(input)), 1u) << node.name() << " reads " << input;
  }
  auto op_of = [&](const std::string& tensor) {
    auto found = nodes.find(node_of(tensor));
    return found == nodes.end() ? std::string("(missing)") : found->second->op();
  };

  // serving_default takes preprocessed images, classify encoded JPEGs; both give the same
  // outputs.
  const struct {
    const char* key;
    const char* input;
    const char* op;
    tensorflow::DataType dtype;
    int rank;
  } signatures[] = {
      {kServingSignatureKey, "images", "PlaceholderWithDefault", tensorflow::DT_FLOAT, 4},
      {kClassifySignatureKey, "image_bytes", "Placeholder", tensorflow::DT_STRING, 1}};
  for (const auto& expected : signatures) {
    SCOPED_TRACE(expected.key);
    ASSERT_EQ(meta.signature_def().count(expected.key), 1u);
    const tensorflow::SignatureDef& s = meta.signature_def().at(expected.key);
    EXPECT_EQ(s.method_name(), "tensorflow/serving/predict");
    ASSERT_EQ(s.inputs().size(), 1u);
    ASSERT_EQ(s.inputs().count(expected.input), 1u);
    const tensorflow::TensorInfo& input = s.inputs().at(expected.input);
    EXPECT_EQ(op_of(input.name()), expected.op);
    EXPECT_EQ(input.dtype(), expected.dtype);
    ASSERT_EQ(input.tensor_shape().dim_size(), expected.rank);
    EXPECT_EQ(input.tensor_shape().dim(0).size(), -1);
    if (expected.rank == 4) {
      EXPECT_EQ(input.tensor_shape().dim(1).size(), size);
      EXPECT_EQ(input.tensor_shape().dim(3).size(), 3);
    }
    ASSERT_EQ(s.outputs().size(), 2u);
    ASSERT_EQ(s.outputs().count("classes"), 1u);
    EXPECT_EQ(op_of(s.outputs().at("classes").name()), "ArgMax");
    EXPECT_EQ(s.outputs().at("classes").dtype(), tensorflow::DT_INT64);
    ASSERT_EQ(s.outputs().count("probabilities"), 1u);
    const tensorflow::TensorInfo& probabilities = s.outputs().at("probabilities");
    EXPECT_EQ(op_of(probabilities.name()), "Softmax");
    ASSERT_EQ(probabilities.tensor_shape().dim_size(), 2);
    EXPECT_EQ(probabilities.tensor_shape().dim(1).size(), 7);
  }
  // The JPEG loop's functions exist, and inside each every input is an argument or a node.
  std::set<std::string> functions;
  for (const tensorflow::FunctionDef& f : meta.graph_def().library().function()) {
    functions.insert(f.signature().name());
    std::set<std::string> names;
    for (const auto& arg : f.signature().input_arg()) names.insert(arg.name());
    for (const tensorflow::NodeDef& node : f.node_def()) names.insert(node.name());
    for (const tensorflow::NodeDef& node : f.node_def()) {
      for (const std::string& input : node.input())
        EXPECT_EQ(names.count(node_of(input)), 1u) << f.signature().name() << ": " << input;
    }
    EXPECT_EQ(static_cast<int>(f.ret().size()), f.signature().output_arg_size());
    for (const auto& [out, tensor] : f.ret()) EXPECT_EQ(names.count(node_of(tensor)), 1u) << tensor;
  }
  for (const auto& [name, node] : nodes) {
    if (node->op() != "While") continue;
    EXPECT_EQ(functions.count(node->attr().at("cond").func().name()), 1u);
    EXPECT_EQ(functions.count(node->attr().at("body").func().name()), 1u);
  }
  EXPECT_EQ(op_of(meta.saver_def().filename_tensor_name()), "PlaceholderWithDefault");
  EXPECT_EQ(op_of(meta.saver_def().restore_op_name()), "NoOp");
  EXPECT_EQ(op_of(meta.saver_def().save_tensor_name()), "Identity");
  EXPECT_EQ(meta.saver_def().version(), tensorflow::SaverDef::V2);

  // variables/: exactly the graph's variables, each equal to the model's tensor.
  std::set<std::string> variables;
  for (const tensorflow::NodeDef& node : meta.graph_def().node()) {
    if (node.op() == "VarHandleOp") variables.insert(node.name());
  }
  EXPECT_FALSE(variables.empty());
  Result<CheckpointContents> bundle = read_tensor_bundle(*exported + "/variables/variables");
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  std::set<std::string> in_bundle;
  for (const TensorEntry& entry : bundle->tensors) {
    in_bundle.insert(entry.name);
    const TensorEntry& expected = model->weights.at(entry.name);
    EXPECT_EQ(entry.shape, expected.shape) << entry.name;
    EXPECT_TRUE(entry.bytes == expected.bytes) << entry.name;
  }
  EXPECT_EQ(in_bundle, variables);
  // Every weight outside the auxiliary head is exported.
  for (const auto& [name, entry] : model->weights) {
    if (name.find("AuxLogits") == std::string::npos) {
      EXPECT_EQ(in_bundle.count(name), 1u) << name;
    }
  }
}

TEST(SavedModelExport, InceptionV3) { check_export("inception_v3", 75, 0.25); }
TEST(SavedModelExport, InceptionV4) { check_export("inception_v4", 75, 0.1); }
TEST(SavedModelExport, Resnet50) { check_export("resnet50", 32, 0.25); }

TEST(SavedModelExport, ATrainingGraphIsRefused) {
  ModelOptions options = inference_model_options({"inception_v3", 7, 75, 75, 0.25, ""}, 2).value();
  options.training = true;
  options.build_losses = true;
  Graph graph = build_model(options).value();
  Result<SavedModelGraph> exported = saved_model_graph(graph);
  ASSERT_FALSE(exported.ok());
  EXPECT_NE(exported.status().message().find("inference graph"), std::string::npos)
      << exported.status().message();
}

TEST(SavedModelExport, NoCheckpointIsAnErrorNamingTheModelDir) {
  const testing::TempDir temp("saved_model_");
  const std::string& dir = temp.path();
  Result<std::string> exported = export_newest_saved_model(dir, dir + "/export");
  ASSERT_FALSE(exported.ok());
  EXPECT_NE(exported.status().message().find("no checkpoint in " + dir), std::string::npos)
      << exported.status().message();
  EXPECT_FALSE(fs::exists(dir + "/export/"));
}

TEST(SavedModelExport, AFailedExportLeavesNoNumberedDirectory) {
  const testing::TempDir temp("saved_model_");
  const std::string& model_dir = temp.path();
  write_random_checkpoint(model_dir, "inception_v3", 75, 0.25);
  Result<InferenceModel> model = load_for_inference(model_dir, "");
  ASSERT_TRUE(model.ok());
  model->weights.erase("InceptionV3/Logits/Conv2d_1c_1x1/biases");
  Result<std::string> exported =
      export_trained_model(*model, model_dir + "/export", ExportFormat::saved_model);
  ASSERT_FALSE(exported.ok());
  EXPECT_NE(exported.status().message().find("InceptionV3/Logits/Conv2d_1c_1x1/biases"),
            std::string::npos)
      << exported.status().message();
  EXPECT_TRUE(fs::is_empty(model_dir + "/export"));
}

}  // namespace
}  // namespace ic
