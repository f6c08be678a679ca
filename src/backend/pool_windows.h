// Where a pooling's windows lie (ops.h's pool_windows computes it from a Pool2dDesc): the
// output's size, and TensorFlow's padding resolved into the rows above and the columns left of
// the input where the first window starts. Plain integers, so that the CUDA kernels, compiled
// apart from ops.h, take it too.
#pragma once

#include <cstdint>

namespace ic {

struct PoolWindows {
  int64_t out_h = 0, out_w = 0;
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, top = 0, left = 0;
};

}  // namespace ic
