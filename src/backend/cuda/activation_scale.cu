// The smaller networks' elementwise ops (cuda_kernels.h): ReLU6, sigmoid and swish, forward and
// backward, and squeeze-and-excitation's per-channel product. float32, grid-stride loops.
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/launch.cuh"

namespace ic::cuda {
namespace {

__device__ inline float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

__global__ void activation_forward_kernel(const float* x, float* y, int64_t n, ActFn fn) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = x[i];
    switch (fn) {
      case ActFn::relu6: y[i] = fminf(fmaxf(v, 0.f), 6.f); break;
      case ActFn::sigmoid: y[i] = sigmoid(v); break;
      case ActFn::swish: y[i] = v * sigmoid(v); break;
    }
  }
}

// From x: ReLU6 passes dy where 0 < x < 6 (TensorFlow's Relu6Grad); sigmoid' = s(1-s);
// swish' = s + x s (1-s).
__global__ void activation_backward_kernel(const float* x, const float* dy, float* dx, int64_t n,
                                           ActFn fn) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = x[i];
    float g = 0.f;
    switch (fn) {
      case ActFn::relu6: g = v > 0.f && v < 6.f ? 1.f : 0.f; break;
      case ActFn::sigmoid: {
        const float s = sigmoid(v);
        g = s * (1.f - s);
        break;
      }
      case ActFn::swish: {
        const float s = sigmoid(v);
        g = s + v * s * (1.f - s);
        break;
      }
    }
    dx[i] = dy[i] * g;
  }
}

__global__ void channel_scale_forward_kernel(const float* x, const float* s, float* y, Nhwc d) {
  const int64_t n = d.numel(), pixels = d.h * d.w;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % d.c, b = i / (pixels * d.c);
    y[i] = x[i] * s[b * d.c + c];
  }
}

__global__ void channel_scale_dx_kernel(const float* dy, const float* s, float* dx, Nhwc d) {
  const int64_t n = d.numel(), pixels = d.h * d.w;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % d.c, b = i / (pixels * d.c);
    dx[i] = dy[i] * s[b * d.c + c];
  }
}

// One thread per (n, c), summing over the pixels in order: deterministic; neighbouring threads
// read neighbouring channels (coalesced).
__global__ void channel_scale_ds_kernel(const float* dy, const float* x, float* ds, Nhwc d) {
  const int64_t n = d.n * d.c, pixels = d.h * d.w;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % d.c, b = i / d.c;
    float sum = 0.f;
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t at = (b * pixels + p) * d.c + c;
      sum += dy[at] * x[at];
    }
    ds[i] = sum;
  }
}

}  // namespace

cudaError_t launch_activation_forward(const float* x, float* y, int64_t count, ActFn fn,
                                      cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  activation_forward_kernel<<<grid_for(count), kBlock, 0, stream>>>(x, y, count, fn);
  return cudaGetLastError();
}

cudaError_t launch_activation_backward(const float* x, const float* dy, float* dx, int64_t count,
                                       ActFn fn, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  activation_backward_kernel<<<grid_for(count), kBlock, 0, stream>>>(x, dy, dx, count, fn);
  return cudaGetLastError();
}

cudaError_t launch_channel_scale_forward(const float* x, const float* s, float* y, Nhwc d,
                                         cudaStream_t stream) {
  if (d.numel() <= 0) return cudaSuccess;
  channel_scale_forward_kernel<<<grid_for(d.numel()), kBlock, 0, stream>>>(x, s, y, d);
  return cudaGetLastError();
}

cudaError_t launch_channel_scale_backward(const float* x, const float* s, const float* dy,
                                          float* dx, float* ds, Nhwc d, cudaStream_t stream) {
  if (d.numel() <= 0) return cudaSuccess;
  if (dx) channel_scale_dx_kernel<<<grid_for(d.numel()), kBlock, 0, stream>>>(dy, s, dx, d);
  if (ds) channel_scale_ds_kernel<<<grid_for(d.n * d.c), kBlock, 0, stream>>>(dy, x, ds, d);
  return cudaGetLastError();
}

}  // namespace ic::cuda
