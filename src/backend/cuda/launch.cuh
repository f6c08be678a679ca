// Launch geometry shared by the .cu files: grid-stride loops over int64 indices.
#pragma once

#include <cstdint>

namespace ic::cuda {

constexpr int kBlock = 256;

// Enough blocks to cover `count` elements, capped: a grid-stride loop does the rest.
inline unsigned grid_for(int64_t count) {
  constexpr int64_t kMaxBlocks = 65536;
  const int64_t blocks = (count + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks > 0 ? blocks : 1) : kMaxBlocks);
}

__device__ inline int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace ic::cuda
