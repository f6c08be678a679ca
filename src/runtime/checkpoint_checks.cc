#include "runtime/checkpoint_checks.h"

#include <cmath>
#include <cstring>

namespace ic {

Status check_checkpoint_meta(const CheckpointMeta& meta, const std::string& path) {
  if (meta.height < 1 || meta.width < 1 || meta.height > kMaxCheckpointImageSide ||
      meta.width > kMaxCheckpointImageSide) {
    return error(path, ": checkpoint metadata claims ", meta.height, "x", meta.width,
                 " images (allowed: 1 to ", kMaxCheckpointImageSide, " per side)");
  }
  if (meta.num_classes < 2 || meta.num_classes > kMaxCheckpointClasses) {
    return error(path, ": checkpoint metadata claims ", meta.num_classes,
                 " classes (allowed: 2 to ", kMaxCheckpointClasses, ")");
  }
  if (!(meta.depth_multiplier > 0 && meta.depth_multiplier <= 16)) {
    return error(path, ": checkpoint metadata claims depth_multiplier ", meta.depth_multiplier,
                 " (allowed: > 0 and <= 16)");
  }
  return Status();
}

Result<CheckpointMeta> checked_checkpoint_meta(const CheckpointContents& file,
                                               const std::string& path) {
  IC_ASSIGN_OR_RETURN(CheckpointMeta meta, parse_checkpoint_metadata(file.metadata, path));
  IC_RETURN_IF_ERROR(check_checkpoint_meta(meta, path));
  IC_RETURN_IF_ERROR(check_checkpoint_values(file, path));
  return meta;
}

Status check_checkpoint_values(const SafetensorsFile& file, const std::string& path) {
  for (const TensorEntry& tensor : file.tensors) {
    const size_t count = tensor.bytes.size() / dtype_size(tensor.dtype);
    for (size_t i = 0; i < count; ++i) {
      float value = 0;
      if (tensor.dtype == DType::f32) {
        std::memcpy(&value, tensor.bytes.data() + i * sizeof(float), sizeof(float));
      } else if (tensor.dtype == DType::bf16) {
        uint16_t high = 0;  // bf16 is a float's upper half
        std::memcpy(&high, tensor.bytes.data() + i * sizeof(uint16_t), sizeof(uint16_t));
        const uint32_t bits = uint32_t{high} << 16;
        std::memcpy(&value, &bits, sizeof(value));
      } else {
        break;  // integer tensors (the global step) cannot be NaN
      }
      if (!std::isfinite(value)) {
        return error(path, ": tensor ", tensor.name, " holds ", value, " at element ", i,
                     " (a diverged or damaged checkpoint; refusing to use it)");
      }
    }
  }
  return Status();
}

}  // namespace ic
