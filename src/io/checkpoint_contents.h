// The format-neutral view of a checkpoint that every reader fills and every writer takes:
// named tensors (dtype, shape, raw little-endian row-major bytes) plus a string-to-string
// metadata map. Both on-disk formats, TensorFlow's tensor bundle (io/tensor_bundle.h) and
// safetensors (io/safetensors.h), read into CheckpointContents, so the trainer, evaluator
// and classify never care which format a model_dir holds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ic {

// One tensor held in memory; `bytes` is shape.numel() * dtype_size(dtype) raw bytes.
struct TensorEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::string bytes;
};

// A tensor somewhere in memory (an arena slice), written without copying. `data` holds
// shape.numel() * dtype_size(dtype) bytes; it may be null only when that is 0.
struct TensorView {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  const void* data = nullptr;
};

// A whole checkpoint read into memory.
struct CheckpointContents {
  std::map<std::string, std::string> metadata;
  std::vector<TensorEntry> tensors;                        // in file order after a read
  const TensorEntry* find(const std::string& name) const;  // nullptr when absent
};

// numel * dtype_size, or nullopt when a dimension is negative or the product overflows.
std::optional<uint64_t> tensor_byte_size(const Shape& shape, DType dtype);

}  // namespace ic
