#include "infer/warmup_export.h"

#include "data/image_codec.h"
#include "io/file_system.h"
#include "io/tfrecord.h"
#include "proto/graph.pb.h"

namespace ic {
namespace {

// A warm-up image larger than this is surely a wrong file (a request body is far smaller).
constexpr uint64_t kMaxWarmupImageBytes = uint64_t{64} << 20;

// The serving messages around the TensorProto are written field by field: infer/ does not
// link TF Serving's generated messages (they come with gRPC, which export_model does without).
// These are TF Serving's field numbers; serve reads the same bytes with the generated classes.
enum ServingField : uint32_t {
  kModelSpecName = 1,           // ModelSpec.name
  kModelSpecSignatureName = 3,  // ModelSpec.signature_name
  kPredictRequestModelSpec = 1,
  kPredictRequestInputs = 2,  // map<string, TensorProto>: entries of key = 1, value = 2
  kMapEntryKey = 1,
  kMapEntryValue = 2,
  kPredictLogRequest = 1,
  kPredictionLogPredictLog = 6,
};

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// A length-delimited field (wire type 2): a string, bytes or an embedded message.
void append_field(std::string& out, uint32_t field, std::string_view bytes) {
  append_varint(out, (uint64_t{field} << 3) | 2);
  append_varint(out, bytes.size());
  out.append(bytes);
}

std::string image_tensor(std::string_view image_bytes) {
  tensorflow::TensorProto tensor;
  tensor.set_dtype(tensorflow::DT_STRING);
  tensor.mutable_tensor_shape()->add_dim()->set_size(1);
  tensor.add_string_val(std::string(image_bytes));
  return tensor.SerializeAsString();
}

}  // namespace

std::string warmup_predict_log(const std::string& model_name, std::string_view image_bytes) {
  std::string spec;
  append_field(spec, kModelSpecName, model_name);
  append_field(spec, kModelSpecSignatureName, "classify");
  std::string input;
  append_field(input, kMapEntryKey, "image_bytes");
  append_field(input, kMapEntryValue, image_tensor(image_bytes));
  std::string request;
  append_field(request, kPredictRequestModelSpec, spec);
  append_field(request, kPredictRequestInputs, input);
  std::string predict_log;
  append_field(predict_log, kPredictLogRequest, request);
  std::string log;
  append_field(log, kPredictionLogPredictLog, predict_log);
  return log;
}

Result<std::vector<std::string>> read_warmup_images(const std::vector<std::string>& image_paths) {
  if (static_cast<int64_t>(image_paths.size()) > kMaxWarmupRecords) {
    return invalid_argument(image_paths.size(), " warm-up images: TF Serving replays at most ",
                            kMaxWarmupRecords);
  }
  std::vector<std::string> images;
  for (const std::string& path : image_paths) {
    Result<std::string> bytes = read_file_to_string(path, kMaxWarmupImageBytes);
    if (!bytes.ok()) {
      return error(bytes.status().code(), "warm-up image ", path, ": ", bytes.status().message());
    }
    Result<RgbImage> decoded = decode_image(*bytes);
    if (!decoded.ok()) {
      return error(decoded.status().code(), "warm-up image ", path,
                   " is no image we read: ", decoded.status().message());
    }
    images.push_back(std::move(*bytes));
  }
  return images;
}

Status write_warmup_requests(const std::string& version_dir, const std::string& model_name,
                             const std::vector<std::string>& images) {
  const std::string path = join_path(version_dir, kWarmupRequestsFile);
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  IC_RETURN_IF_ERROR(fs->make_dirs(join_path(version_dir, "assets.extra")));
  IC_ASSIGN_OR_RETURN(TfRecordWriter writer, TfRecordWriter::create(path));
  for (const std::string& image : images)
    IC_RETURN_IF_ERROR(writer.write(warmup_predict_log(model_name, image)));
  return writer.close();
}

}  // namespace ic
