#include "serve/grpc_model_info.h"

#include <cstdint>
#include <initializer_list>

namespace ic {
namespace {

tensorflow::TensorInfo tensor_info(const char* name, tensorflow::DataType dtype,
                                   std::initializer_list<int64_t> dims) {
  tensorflow::TensorInfo info;
  info.set_name(std::string(name) + ":0");
  info.set_dtype(dtype);
  for (int64_t d : dims) info.mutable_tensor_shape()->add_dim()->set_size(d);
  return info;
}

tensorflow::SignatureDef signature(const char* input, tensorflow::DataType dtype,
                                   std::initializer_list<int64_t> dims, int64_t classes) {
  tensorflow::SignatureDef def;
  (*def.mutable_inputs())[input] = tensor_info(input, dtype, dims);
  (*def.mutable_outputs())["classes"] = tensor_info("classes", tensorflow::DT_INT64, {-1});
  (*def.mutable_outputs())["probabilities"] =
      tensor_info("probabilities", tensorflow::DT_FLOAT, {-1, classes});
  def.set_method_name("tensorflow/serving/predict");
  return def;
}

}  // namespace

tensorflow::serving::SignatureDefMap signature_def_map(const CheckpointMeta& meta) {
  tensorflow::serving::SignatureDefMap map;
  (*map.mutable_signature_def())["serving_default"] =
      signature("images", tensorflow::DT_FLOAT, {-1, meta.height, meta.width, 3}, meta.num_classes);
  (*map.mutable_signature_def())["classify"] =
      signature("image_bytes", tensorflow::DT_STRING, {-1}, meta.num_classes);
  return map;
}

}  // namespace ic
