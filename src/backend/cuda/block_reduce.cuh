// A fixed-order tree reduction over one block of kBlock threads (deterministic results).
#pragma once

#include "backend/cuda/launch.cuh"

namespace ic::cuda {

// Every thread passes its value; every thread gets op-combined total. `scratch` is a
// __shared__ array of kBlock elements.
template <typename T, typename Op>
__device__ T block_reduce(T value, T* scratch, Op op) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int half = kBlock / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half)
      scratch[threadIdx.x] = op(scratch[threadIdx.x], scratch[threadIdx.x + half]);
    __syncthreads();
  }
  const T total = scratch[0];
  __syncthreads();  // scratch may be reused by the caller's next reduction
  return total;
}

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

}  // namespace ic::cuda
