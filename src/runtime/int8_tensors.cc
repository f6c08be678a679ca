#include "runtime/int8_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ic {

std::string int8_weight_scales_name(const std::string& layer) {
  return layer + "/int8_weight_scales";
}
std::string int8_input_scale_name(const std::string& layer) { return layer + "/int8_input_scale"; }

namespace {

constexpr const char* kInputScaleSuffix = "/int8_input_scale";

bool positive_finite(float v) { return v > 0.f && std::isfinite(v); }

float read_f32(const TensorEntry& entry, size_t k) {
  float v = 0.f;
  std::memcpy(&v, entry.bytes.data() + k * sizeof(float), sizeof v);
  return v;
}

}  // namespace

Status read_int8_layers(CheckpointContents& file, const std::string& path,
                        QuantizationTable& table) {
  auto meta = file.metadata.find("calibration_images");
  if (meta != file.metadata.end()) table.calibration_images = std::atoll(meta->second.c_str());
  meta = file.metadata.find("calibration_data");
  if (meta != file.metadata.end()) table.calibration_data = meta->second;
  for (const TensorEntry& scale_entry : file.tensors) {
    const std::string& name = scale_entry.name;
    const size_t suffix = std::strlen(kInputScaleSuffix);
    if (name.size() <= suffix || name.compare(name.size() - suffix, suffix, kInputScaleSuffix) != 0)
      continue;
    const std::string layer = name.substr(0, name.size() - suffix);
    if (scale_entry.dtype != DType::f32 || scale_entry.bytes.size() != sizeof(float))
      return data_loss(path, ": ", name, " must be one float32");
    LayerQuantization q;
    q.input_scale = read_f32(scale_entry, 0);
    if (!positive_finite(q.input_scale))
      return data_loss(path, ": ", name, " is ", q.input_scale, ", not a positive scale");
    const TensorEntry* scales = file.find(int8_weight_scales_name(layer));
    if (scales == nullptr || scales->dtype != DType::f32 || scales->shape.rank() != 1)
      return data_loss(path, ": int8 layer ", layer, " has no float32 vector ",
                       int8_weight_scales_name(layer));
    const auto channels = static_cast<size_t>(scales->shape[0]);
    for (size_t c = 0; c < channels; ++c) {
      q.weight_scales.push_back(read_f32(*scales, c));
      if (!positive_finite(q.weight_scales.back()))
        return data_loss(path, ": ", scales->name, "[", c, "] is ", q.weight_scales.back(),
                         ", not a positive scale");
    }
    auto weights = std::find_if(file.tensors.begin(), file.tensors.end(),
                                [&](const TensorEntry& t) { return t.name == layer + "/weights"; });
    if (weights == file.tensors.end() || weights->dtype != DType::s8)
      return data_loss(path, ": int8 layer ", layer, " has no int8 tensor ", layer, "/weights");
    const auto count = static_cast<size_t>(weights->shape.numel());
    if (channels == 0 || weights->shape.rank() < 2 ||
        static_cast<size_t>(weights->shape.dims().back()) != channels)
      return data_loss(path, ": ", weights->name, " ", weights->shape.str(), " does not have ",
                       channels, " output channels as ", scales->name, " says");
    std::string values(count * sizeof(float), '\0');
    for (size_t k = 0; k < count; ++k) {
      const float v = static_cast<float>(static_cast<int8_t>(weights->bytes[k])) *
                      q.weight_scales[k % channels];
      std::memcpy(values.data() + k * sizeof(float), &v, sizeof v);
    }
    weights->dtype = DType::f32;
    weights->bytes = std::move(values);
    table.layers[layer] = std::move(q);
  }
  if (table.layers.empty()) return data_loss(path, ": an int8 export without int8 layers");
  return Status();
}

}  // namespace ic
