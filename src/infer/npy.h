// NumPy .npy files of float32 arrays (format versions 1.0-3.0 read, 1.0 written): the
// classify program's preprocessed inputs and its --logits_out. Little-endian '<f4', C order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ic {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major, product(shape) values
};

// Errors name the file and what is unsupported (another dtype, Fortran order, truncation).
Result<NpyArray> read_npy(const std::string& path);
Status write_npy(const std::string& path, const NpyArray& array);

}  // namespace ic
