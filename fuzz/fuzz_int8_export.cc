// The int8 export's tensors (runtime/int8_tensors.h) in a safetensors file: the input is a
// whole file. What reads must leave every int8 layer with positive finite scales and its
// weights as float32 of the right size.
#include <cmath>
#include <cstdlib>

#include "fuzz/fuzz_util.h"
#include "io/safetensors.h"
#include "runtime/int8_tensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      ic::fuzz::write_scratch_file("model.safetensors", ic::fuzz::as_view(data, size));
  ic::Result<ic::SafetensorsFile> file = ic::read_safetensors(path);
  if (!file.ok()) return 0;
  ic::QuantizationTable table;
  if (!ic::read_int8_layers(*file, path, table).ok()) return 0;
  if (table.layers.empty()) std::abort();
  for (const auto& [layer, q] : table.layers) {
    if (!(q.input_scale > 0.f) || !std::isfinite(q.input_scale)) std::abort();
    for (float s : q.weight_scales)
      if (!(s > 0.f) || !std::isfinite(s)) std::abort();
    const ic::TensorEntry* weights = file->find(layer + "/weights");
    if (weights == nullptr || weights->dtype != ic::DType::f32) std::abort();
    if (weights->bytes.size() != static_cast<size_t>(weights->shape.numel()) * sizeof(float))
      std::abort();
  }
  return 0;
}
