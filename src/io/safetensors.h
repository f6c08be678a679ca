// safetensors checkpoint files (https://github.com/huggingface/safetensors), the format every
// checkpoint in a model_dir uses:
//   uint64 N (little-endian) | N bytes of JSON header, space-padded so 8+N is a multiple of 8 |
//   tensor data, each tensor's bytes at [begin, end) of the data section, in header order.
// Header: {"__metadata__":{"key":"value",...},
//          "name":{"dtype":"F32"|"BF16"|"I32"|"I64","shape":[...],"data_offsets":[begin,end]},...}
// Data is little-endian and row-major (TF-slim layouts: HWIO kernels).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace ic {

// One tensor held in memory; `bytes` is shape.numel() * dtype_size(dtype) raw bytes.
struct TensorEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::string bytes;
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<TensorEntry> tensors;  // in file (data offset) order after a read
  const TensorEntry* find(const std::string& name) const;  // nullptr when absent
};

// A tensor somewhere in memory (an arena slice), written without copying. `data` holds
// shape.numel() * dtype_size(dtype) bytes; it may be null only when that is 0.
struct TensorView {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  const void* data = nullptr;
};

// Writes ATOMICALLY: a temp file in the same directory gets the bytes, is flushed and fsynced,
// then renamed over `path`, and the directory is fsynced; a crash leaves either the old file or
// the new one, never a mix. Tensors are laid out largest element size first (each tensor's
// data stays aligned to its element size), otherwise in the given order. Names must be unique,
// non-empty and not "__metadata__".
Status write_safetensors(const std::string& path,
                         const std::map<std::string, std::string>& metadata,
                         const std::vector<TensorView>& tensors);
Status write_safetensors(const std::string& path, const SafetensorsFile& file);

// Reads and validates the whole file: header size, JSON syntax, dtypes, shapes, that each
// tensor's byte range matches its shape and that the ranges tile the data section exactly.
// Errors name the file and what is wrong.
Result<SafetensorsFile> read_safetensors(const std::string& path);

// Temp file + fsync + rename + directory fsync, for any small file that must never be seen
// half-written (the model_dir's `checkpoint` index). The pieces are written one after another.
Status write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces);

// "F32", "BF16", "I32", "I64": safetensors' names for our dtypes.
const char* safetensors_dtype_name(DType dtype);

}  // namespace ic
