// onnx_int8_export: the two ONNX files tests/interop/check_onnx_qdq.py needs to check the QDQ
// export of an int8 model with ONNX Runtime, from a checkpoint directory:
//   onnx_int8_export calibration MODEL_DIR OUT.onnx
//       the float32 export with one more graph output per quantizable layer (each convolution
//       and dense layer of the main network that does not read the images): "<layer>:input",
//       the value the layer reads, for the script's min/max calibration in ONNX Runtime
//   onnx_int8_export qdq MODEL_DIR TABLE OUT.onnx
//       the export of the model with the int8 table TABLE, lines "<layer> <input scale>";
//       each layer's weight scales are per_channel_weight_scales of its folded weights (the
//       float32 export's "<layer>/weights" initializer), as calibration sets them
// The int8 export itself lives elsewhere; this program only makes a table's QDQ file so that
// ONNX Runtime can run it.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "infer/onnx_export.h"
#include "runtime/inference_model.h"

namespace ic {
namespace {

Result<onnx::ModelProto> read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto m;
  if (!in || !m.ParseFromString(bytes.str())) return error(path, ": not an ONNX model");
  return m;
}

// The float32 export of `model`, read back.
Result<onnx::ModelProto> float_export(const InferenceModel& model, const std::string& out) {
  const std::string path = out + ".float32.tmp";
  IC_RETURN_IF_ERROR(export_onnx(model, path));
  Result<onnx::ModelProto> m = read_model(path);
  std::filesystem::remove(path);
  return m;
}

bool quantizable(const onnx::NodeProto& n) {
  return (n.op_type() == "Conv" || n.op_type() == "Gemm") && n.input(0) != "images_nchw";
}

Status write_calibration_model(const InferenceModel& model, const std::string& out) {
  IC_ASSIGN_OR_RETURN(onnx::ModelProto m, float_export(model, out));
  onnx::GraphProto& g = *m.mutable_graph();
  const int layers = g.node_size();
  for (int k = 0; k < layers; ++k) {
    const onnx::NodeProto n = g.node(k);
    if (!quantizable(n)) continue;
    const std::string name = n.name() + ":input";
    onnx::NodeProto& identity = *g.add_node();
    identity.set_op_type("Identity");
    identity.set_name(name);
    identity.add_input(n.input(0));
    identity.add_output(name);
    onnx::ValueInfoProto& output = *g.add_output();
    output.set_name(name);
    output.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes)) return error(out, ": cannot serialise");
  std::ofstream file(out, std::ios::binary);
  file << bytes;
  return file ? Status() : error(out, ": cannot write");
}

Status write_qdq_model(InferenceModel model, const std::string& table_path,
                       const std::string& out) {
  IC_ASSIGN_OR_RETURN(onnx::ModelProto f32, float_export(model, out));
  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const onnx::TensorProto& t : f32.graph().initializer()) initializers[t.name()] = &t;
  std::map<std::string, std::string> op_of;
  for (const onnx::NodeProto& n : f32.graph().node())
    if (quantizable(n)) op_of[n.name()] = n.op_type();

  QuantizationTable table;
  std::ifstream in(table_path);
  std::string layer;
  float input_scale = 0.f;
  while (in >> layer >> input_scale) {
    auto op = op_of.find(layer);
    auto w = initializers.find(layer + "/weights");
    if (op == op_of.end() || w == initializers.end())
      return error(table_path, ": ", layer, " is not a quantizable layer");
    const onnx::TensorProto& t = *w->second;
    std::vector<float> values(t.raw_data().size() / sizeof(float));
    std::memcpy(values.data(), t.raw_data().data(), values.size() * sizeof(float));
    // Conv's OIHW has the output channel outermost; Gemm's [in,out] innermost.
    const bool conv = op->second == "Conv";
    const int64_t channels = conv ? t.dims(0) : t.dims(1);
    std::vector<float> largest(static_cast<size_t>(channels), 0.f);
    const size_t per_channel = values.size() / largest.size();
    for (size_t k = 0; k < values.size(); ++k) {
      float& m = largest[conv ? k / per_channel : k % largest.size()];
      m = std::max(m, std::fabs(values[k]));
    }
    for (float& s : largest) s = s > 0.f ? s / static_cast<float>(kInt8WeightMax) : 1.f;
    table.layers[layer] = LayerQuantization{input_scale, std::move(largest)};
  }
  if (!in.eof()) return error(table_path, ": lines must be '<layer> <input scale>'");
  model.int8 = std::move(table);
  return export_onnx(model, out);
}

int run(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "calibration" && argc == 4) || (mode == "qdq" && argc == 5))) {
    std::fprintf(stderr,
                 "usage: onnx_int8_export calibration MODEL_DIR OUT.onnx\n"
                 "       onnx_int8_export qdq MODEL_DIR TABLE OUT.onnx\n");
    return 2;
  }
  Result<InferenceModel> model = load_for_inference(argv[2], "");
  Status written = model.status();
  if (model.ok()) {
    written = mode == "calibration" ? write_calibration_model(*model, argv[3])
                                    : write_qdq_model(std::move(model).value(), argv[3], argv[4]);
  }
  if (!written.ok()) {
    std::fprintf(stderr, "onnx_int8_export: %s\n", written.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace ic

int main(int argc, char** argv) { return ic::run(argc, argv); }
