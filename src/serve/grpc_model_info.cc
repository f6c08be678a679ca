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

Status check_reload_config(const std::string& served_name, const std::string& model_dir,
                           const tensorflow::serving::ModelServerConfig& config) {
  if (served_name.empty()) return unavailable("no model is loaded yet: nothing to reload");
  if (!config.has_model_config_list()) {
    return invalid_argument("the config has no model_config_list (serve reads only that)");
  }
  const auto& models = config.model_config_list().config();
  if (models.size() != 1) {
    return invalid_argument("the config lists ", models.size(), " models; serve serves one ('",
                            served_name, "' from --model_dir) and cannot serve several yet");
  }
  const tensorflow::serving::ModelConfig& model = models[0];
  if (model.name() != served_name) {
    return invalid_argument("the config names model '", model.name(), "'; this server serves '",
                            served_name, "' and cannot add or rename models");
  }
  if (!model.base_path().empty() && model.base_path() != model_dir) {
    return invalid_argument("the config's base_path ", model.base_path(),
                            " is not this server's --model_dir ", model_dir,
                            " (a config cannot move a model)");
  }
  return Status();
}

}  // namespace ic
