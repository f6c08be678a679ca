// Flat arena passes: the optimizers' arithmetic (backend.h's scale_add family, which
// train/optimizer.cc composes into each update), the EMA of the weights, and the deterministic
// sums of squares (weight decay; per-variable norms). Formulas are backend.h's, as the CPU
// backend computes them.
#include "backend/cuda/block_reduce.cuh"
#include "backend/cuda/cuda_kernels.h"

namespace ic::cuda {
namespace {

__global__ void scale_add_kernel(float* y, float a, float b, const float* x, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = a * y[i] + b * x[i];
}

__global__ void scale_add_square_kernel(float* y, float a, float b, const float* x, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = a * y[i] + b * x[i] * x[i];
}

__global__ void scale_add_over_root_kernel(float* y, float a, float b, const float* x,
                                           const float* z, float inner_epsilon, float divisor,
                                           float outer_epsilon, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    y[i] = a * y[i] + b * x[i] / (sqrtf(z[i] + inner_epsilon) / divisor + outer_epsilon);
  }
}

// One block per range: sums[r] = Σ x² over ranges[r], in double, in a fixed order.
__global__ void sum_squares_per_range_kernel(const float* x, const int64_t* ranges, double* sums) {
  __shared__ double scratch[kBlock];
  const int64_t offset = ranges[2 * blockIdx.x], count = ranges[2 * blockIdx.x + 1];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    const double v = x[offset + i];
    s += v * v;
  }
  const double total = block_reduce(s, scratch, Sum{});
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

__global__ void ema_kernel(float* shadow, const float* value, int64_t n, float rate) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    shadow[i] -= rate * (shadow[i] - value[i]);
}

// Stage 1: kSumSquaresBlocks blocks each write one double partial sum.
__global__ void sum_squares_partial_kernel(const float* x, int64_t n, double* partials) {
  __shared__ double scratch[kBlock];
  double s = 0.0;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const double v = x[i];
    s += v * v;
  }
  const double total = block_reduce(s, scratch, Sum{});
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Stage 2: one block adds the partials.
__global__ void sum_squares_final_kernel(const double* partials, float* result) {
  __shared__ double scratch[kBlock];
  double s = 0.0;
  for (int i = threadIdx.x; i < kSumSquaresBlocks; i += kBlock) s += partials[i];
  const double total = block_reduce(s, scratch, Sum{});
  if (threadIdx.x == 0) *result = static_cast<float>(total);
}

}  // namespace

cudaError_t launch_sum_squares(const float* x, int64_t count, double* partials, float* result,
                               cudaStream_t stream) {
  sum_squares_partial_kernel<<<kSumSquaresBlocks, kBlock, 0, stream>>>(x, count, partials);
  sum_squares_final_kernel<<<1, kBlock, 0, stream>>>(partials, result);
  return cudaGetLastError();
}

cudaError_t launch_scale_add(float* y, float a, float b, const float* x, int64_t count,
                             cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  scale_add_kernel<<<grid_for(count), kBlock, 0, stream>>>(y, a, b, x, count);
  return cudaGetLastError();
}

cudaError_t launch_scale_add_square(float* y, float a, float b, const float* x, int64_t count,
                                    cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  scale_add_square_kernel<<<grid_for(count), kBlock, 0, stream>>>(y, a, b, x, count);
  return cudaGetLastError();
}

cudaError_t launch_scale_add_over_root(float* y, float a, float b, const float* x, const float* z,
                                       float inner_epsilon, float divisor, float outer_epsilon,
                                       int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  scale_add_over_root_kernel<<<grid_for(count), kBlock, 0, stream>>>(y, a, b, x, z, inner_epsilon,
                                                                     divisor, outer_epsilon, count);
  return cudaGetLastError();
}

cudaError_t launch_sum_squares_per_range(const float* x, const int64_t* ranges, int64_t range_count,
                                         double* sums, cudaStream_t stream) {
  if (range_count <= 0) return cudaSuccess;
  sum_squares_per_range_kernel<<<static_cast<unsigned>(range_count), kBlock, 0, stream>>>(x, ranges,
                                                                                          sums);
  return cudaGetLastError();
}

cudaError_t launch_ema(float* shadow, const float* value, int64_t count, float decay,
                       cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  ema_kernel<<<grid_for(count), kBlock, 0, stream>>>(shadow, value, count, 1.f - decay);
  return cudaGetLastError();
}

}  // namespace ic::cuda
