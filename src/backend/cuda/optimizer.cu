// Flat arena passes: the optimizers (one fused kernel over the whole parameter arena), the
// EMA of the weights, and the deterministic sum of squares (weight decay, gradient norms).
// Formulas are backend.h's, as the CPU backend computes them.
#include "backend/cuda/block_reduce.cuh"
#include "backend/cuda/cuda_kernels.h"

namespace ic::cuda {
namespace {

__global__ void rmsprop_kernel(float* p, const float* g, float* ms, float* mom, int64_t n, float lr,
                               float decay, float momentum, float epsilon) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float grad = g[i];
    const float m = decay * ms[i] + (1.f - decay) * grad * grad;
    const float v = momentum * mom[i] + lr * grad / sqrtf(m + epsilon);
    ms[i] = m;
    mom[i] = v;
    p[i] -= v;
  }
}

__global__ void momentum_kernel(float* p, const float* g, float* accum, int64_t n, float lr,
                                float momentum) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float a = momentum * accum[i] + g[i];
    accum[i] = a;
    p[i] -= lr * a;
  }
}

__global__ void sgd_kernel(float* p, const float* g, int64_t n, float lr) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) p[i] -= lr * g[i];
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

cudaError_t launch_rmsprop(float* p, const float* g, float* ms, float* mom, int64_t count, float lr,
                           float decay, float momentum, float epsilon, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  rmsprop_kernel<<<grid_for(count), kBlock, 0, stream>>>(p, g, ms, mom, count, lr, decay, momentum,
                                                         epsilon);
  return cudaGetLastError();
}

cudaError_t launch_momentum(float* p, const float* g, float* accum, int64_t count, float lr,
                            float momentum, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  momentum_kernel<<<grid_for(count), kBlock, 0, stream>>>(p, g, accum, count, lr, momentum);
  return cudaGetLastError();
}

cudaError_t launch_sgd(float* p, const float* g, int64_t count, float lr, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  sgd_kernel<<<grid_for(count), kBlock, 0, stream>>>(p, g, count, lr);
  return cudaGetLastError();
}

cudaError_t launch_ema(float* shadow, const float* value, int64_t count, float decay,
                       cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  ema_kernel<<<grid_for(count), kBlock, 0, stream>>>(shadow, value, count, 1.f - decay);
  return cudaGetLastError();
}

}  // namespace ic::cuda
