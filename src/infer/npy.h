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

// An INVALID_ARGUMENT error naming `path`, the first NaN or infinite value, its flat index and
// its coordinates in the array's shape ([n,h,w,c] for a batch of images): a model fed such a
// value computes NaN probabilities for the whole image, which look like a result.
Status check_all_finite(const NpyArray& array, const std::string& path);

}  // namespace ic
