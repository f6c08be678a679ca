// Max and average pooling with TensorFlow's padding (possibly asymmetric: `top`/`left` are
// the smaller halves) done directly, so no padded copy is needed. Backward passes gather
// (one thread per input element, looping over the windows that cover it): no atomics, so
// results are deterministic.
#include <cfloat>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/launch.cuh"

namespace ic::cuda {
namespace {

// The output rows [first, last] whose windows cover input row `h` (empty if first > last).
__device__ void covering_range(int64_t h, int top, int kernel, int stride, int64_t out,
                               int64_t& first, int64_t& last) {
  const int64_t lo = h + top - kernel + 1;
  first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  last = (h + top) / stride;
  if (last > out - 1) last = out - 1;
}

__global__ void max_pool_forward_kernel(const float* x, float* y, int32_t* argmax, PoolGeometry g) {
  const Nhwc s = g.in;
  const int64_t n = s.n * g.out_h * g.out_w * s.c;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % s.c;
    const int64_t ow = (i / s.c) % g.out_w;
    const int64_t oh = (i / (s.c * g.out_w)) % g.out_h;
    const int64_t b = i / (s.c * g.out_w * g.out_h);
    const int64_t h0 = oh * g.stride_h - g.top, w0 = ow * g.stride_w - g.left;
    float best = -FLT_MAX;
    int64_t best_at = -1;
    for (int kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t h = h0 + kh;
      if (h < 0 || h >= s.h) continue;
      for (int kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t w = w0 + kw;
        if (w < 0 || w >= s.w) continue;
        const float v = x[((b * s.h + h) * s.w + w) * s.c + c];
        if (best_at < 0 || v > best) {
          best = v;
          best_at = h * s.w + w;
        }
      }
    }
    y[i] = best_at < 0 ? 0.f : best;
    if (argmax) argmax[i] = static_cast<int32_t>(best_at);
  }
}

__global__ void max_pool_backward_kernel(const float* dy, const int32_t* argmax, float* dx,
                                         PoolGeometry g) {
  const Nhwc s = g.in;
  const int64_t n = s.numel();
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % s.c;
    const int64_t w = (i / s.c) % s.w;
    const int64_t h = (i / (s.c * s.w)) % s.h;
    const int64_t b = i / (s.c * s.w * s.h);
    int64_t oh0, oh1, ow0, ow1;
    covering_range(h, g.top, g.kernel_h, g.stride_h, g.out_h, oh0, oh1);
    covering_range(w, g.left, g.kernel_w, g.stride_w, g.out_w, ow0, ow1);
    const int32_t self = static_cast<int32_t>(h * s.w + w);
    float sum = 0.f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t o = ((b * g.out_h + oh) * g.out_w + ow) * s.c + c;
        if (argmax[o] == self) sum += dy[o];
      }
    dx[i] = sum;
  }
}

// In-image elements of the window at output (oh, ow).
__device__ int window_count(const PoolGeometry& g, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * g.stride_h - g.top, w0 = ow * g.stride_w - g.left;
  const int64_t h_lo = h0 < 0 ? 0 : h0, w_lo = w0 < 0 ? 0 : w0;
  const int64_t h_hi = h0 + g.kernel_h > g.in.h ? g.in.h : h0 + g.kernel_h;
  const int64_t w_hi = w0 + g.kernel_w > g.in.w ? g.in.w : w0 + g.kernel_w;
  const int64_t count = (h_hi - h_lo) * (w_hi - w_lo);
  return count > 0 ? static_cast<int>(count) : 1;
}

__global__ void avg_pool_forward_kernel(const float* x, float* y, PoolGeometry g) {
  const Nhwc s = g.in;
  const int64_t n = s.n * g.out_h * g.out_w * s.c;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % s.c;
    const int64_t ow = (i / s.c) % g.out_w;
    const int64_t oh = (i / (s.c * g.out_w)) % g.out_h;
    const int64_t b = i / (s.c * g.out_w * g.out_h);
    const int64_t h0 = oh * g.stride_h - g.top, w0 = ow * g.stride_w - g.left;
    float sum = 0.f;
    for (int kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t h = h0 + kh;
      if (h < 0 || h >= s.h) continue;
      for (int kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t w = w0 + kw;
        if (w < 0 || w >= s.w) continue;
        sum += x[((b * s.h + h) * s.w + w) * s.c + c];
      }
    }
    y[i] = sum / static_cast<float>(window_count(g, oh, ow));
  }
}

__global__ void avg_pool_backward_kernel(const float* dy, float* dx, PoolGeometry g) {
  const Nhwc s = g.in;
  const int64_t n = s.numel();
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % s.c;
    const int64_t w = (i / s.c) % s.w;
    const int64_t h = (i / (s.c * s.w)) % s.h;
    const int64_t b = i / (s.c * s.w * s.h);
    int64_t oh0, oh1, ow0, ow1;
    covering_range(h, g.top, g.kernel_h, g.stride_h, g.out_h, oh0, oh1);
    covering_range(w, g.left, g.kernel_w, g.stride_w, g.out_w, ow0, ow1);
    float sum = 0.f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow)
        sum += dy[((b * g.out_h + oh) * g.out_w + ow) * s.c + c] /
               static_cast<float>(window_count(g, oh, ow));
    dx[i] = sum;
  }
}

int64_t output_numel(const PoolGeometry& g) { return g.in.n * g.out_h * g.out_w * g.in.c; }

}  // namespace

cudaError_t launch_max_pool_forward(const float* x, float* y, int32_t* argmax,
                                    const PoolGeometry& g, cudaStream_t stream) {
  const int64_t n = output_numel(g);
  if (n <= 0) return cudaSuccess;
  max_pool_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, y, argmax, g);
  return cudaGetLastError();
}

cudaError_t launch_max_pool_backward(const float* dy, const int32_t* argmax, float* dx,
                                     const PoolGeometry& g, cudaStream_t stream) {
  if (g.in.numel() <= 0) return cudaSuccess;
  max_pool_backward_kernel<<<grid_for(g.in.numel()), kBlock, 0, stream>>>(dy, argmax, dx, g);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool_forward(const float* x, float* y, const PoolGeometry& g,
                                    cudaStream_t stream) {
  const int64_t n = output_numel(g);
  if (n <= 0) return cudaSuccess;
  avg_pool_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, y, g);
  return cudaGetLastError();
}

cudaError_t launch_avg_pool_backward(const float* dy, float* dx, const PoolGeometry& g,
                                     cudaStream_t stream) {
  if (g.in.numel() <= 0) return cudaSuccess;
  avg_pool_backward_kernel<<<grid_for(g.in.numel()), kBlock, 0, stream>>>(dy, dx, g);
  return cudaGetLastError();
}

}  // namespace ic::cuda
