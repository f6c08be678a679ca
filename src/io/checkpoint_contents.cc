#include "io/checkpoint_contents.h"

namespace ic {

const TensorEntry* CheckpointContents::find(const std::string& name) const {
  for (const TensorEntry& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::optional<uint64_t> tensor_byte_size(const Shape& shape, DType dtype) {
  uint64_t n = dtype_size(dtype);
  for (const int64_t d : shape.dims()) {
    if (d < 0) return std::nullopt;
    const uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && n > UINT64_MAX / ud) return std::nullopt;
    n *= ud;
  }
  return n;
}

}  // namespace ic
