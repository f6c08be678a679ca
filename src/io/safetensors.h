// safetensors checkpoint files (https://github.com/huggingface/safetensors), the format of
// model.ckpt-N.safetensors (--checkpoint_format=safetensors):
//   uint64 N (little-endian) | N bytes of JSON header, space-padded so 8+N is a multiple of 8 |
//   tensor data, each tensor's bytes at [begin, end) of the data section, in header order.
// Header: {"__metadata__":{"key":"value",...},
//          "name":{"dtype":"F32"|"BF16"|"I32"|"I64"|"U8"|"I8","shape":[...],"data_offsets":[begin,end]},...}
// Data is little-endian and row-major (TF-slim layouts: HWIO kernels).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "io/checkpoint_contents.h"

namespace ic {

// The safetensors reader fills the format-neutral CheckpointContents.
using SafetensorsFile = CheckpointContents;

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

// "F32", "BF16", "I32", "I64", "U8", "I8": safetensors' names for our dtypes.
const char* safetensors_dtype_name(DType dtype);

}  // namespace ic
