// Elementwise and data-movement kernels: relu, add, concat columns, global average pool,
// dropout, bias, padding/precision staging for convolutions, weight layout transposes.
// Every kernel is a grid-stride loop over int64 indices, so any size fits one launch.
#include <cuda_bf16.h>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/launch.cuh"

namespace ic::cuda {
namespace {

__global__ void fill_kernel(float* y, float value, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = value;
}

__global__ void add_inplace_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] += x[i];
}

__global__ void axpy_kernel(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] += a * x[i];
}

__global__ void relu_forward_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = fmaxf(x[i], 0.f);
}

__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}

__global__ void add_forward_kernel(const float* a, const float* b, float* y, int64_t n, bool relu) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = a[i] + b[i];
    y[i] = relu ? fmaxf(v, 0.f) : v;
  }
}

__global__ void add_backward_kernel(const float* y, const float* dy, float* da, float* db,
                                    int64_t n, bool relu) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float g = (!relu || y[i] > 0.f) ? dy[i] : 0.f;
    if (da) da[i] = g;
    if (db) db[i] = g;
  }
}

__global__ void copy_columns_kernel(const float* src, int64_t src_ld, int64_t src_offset,
                                    float* dst, int64_t dst_ld, int64_t dst_offset, int64_t rows,
                                    int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t r = i / cols, j = i % cols;
    dst[r * dst_ld + dst_offset + j] = src[r * src_ld + src_offset + j];
  }
}

// One thread per (n, c): sums its column of h*w pixels in a fixed order.
__global__ void gap_forward_kernel(const float* x, float* y, Nhwc s) {
  const int64_t n = s.n * s.c, hw = s.h * s.w;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t b = i / s.c, c = i % s.c;
    const float* p = x + b * hw * s.c + c;
    float sum = 0.f;
    for (int64_t k = 0; k < hw; ++k) sum += p[k * s.c];
    y[i] = sum / static_cast<float>(hw);
  }
}

__global__ void gap_backward_kernel(const float* dy, float* dx, Nhwc s) {
  const int64_t n = s.numel(), hw = s.h * s.w;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % s.c, b = i / (hw * s.c);
    dx[i] = dy[b * s.c + c] / static_cast<float>(hw);
  }
}

// backend/cpu/dropout_mask.h, bit for bit.
__device__ bool dropout_keep(uint64_t seed, uint64_t index, uint32_t threshold) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return static_cast<uint32_t>(z >> 40) < threshold;
}

__global__ void dropout_kernel(const float* x, float* y, int64_t n, int64_t per_mask,
                               float keep_prob, uint32_t threshold, uint64_t seed,
                               const uint64_t* seed_cell) {
  const uint64_t s = seed_cell ? *seed_cell : seed;
  for (int64_t i = first_index(); i < n; i += grid_stride())
    y[i] = dropout_keep(s, static_cast<uint64_t>(i / per_mask), threshold) ? x[i] / keep_prob : 0.f;
}

__global__ void bias_add_kernel(float* y, const float* bias, int64_t rows, int64_t channels) {
  const int64_t n = rows * channels;
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] += bias[i % channels];
}

// Block (32, 8): threadIdx.x picks a column, the 8 rows of threads stride down the rows, then
// the 8 partial sums are added in a fixed order. Coalesced reads, deterministic result.
__global__ void bias_grad_kernel(const float* dy, float* db, int64_t rows, int64_t channels) {
  __shared__ float partial[8][33];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float sum = 0.f;
  if (c < channels)
    for (int64_t r = threadIdx.y; r < rows; r += 8) sum += dy[r * channels + c];
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float total = 0.f;
    for (int k = 0; k < 8; ++k) total += partial[k][threadIdx.x];
    db[c] = total;
  }
}

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
__device__ float to_float(float v) { return v; }
__device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__global__ void pad_convert_kernel(const float* src, Nhwc s, T* dst, int64_t dst_h, int64_t dst_w,
                                   int top, int left) {
  const int64_t n = s.n * dst_h * dst_w * s.c;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % s.c;
    int64_t rest = i / s.c;
    const int64_t w = rest % dst_w - left;
    rest /= dst_w;
    const int64_t h = rest % dst_h - top;
    const int64_t b = rest / dst_h;
    const bool inside = h >= 0 && h < s.h && w >= 0 && w < s.w;
    dst[i] = from_float<T>(inside ? src[((b * s.h + h) * s.w + w) * s.c + c] : 0.f);
  }
}

template <typename T>
__global__ void crop_convert_kernel(const T* src, int64_t src_h, int64_t src_w, int top, int left,
                                    float* dst, Nhwc s, const float* bias) {
  const int64_t n = s.numel();
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % s.c;
    int64_t rest = i / s.c;
    const int64_t w = rest % s.w;
    rest /= s.w;
    const int64_t h = rest % s.h;
    const int64_t b = rest / s.h;
    float v = to_float(src[((b * src_h + h + top) * src_w + w + left) * s.c + c]);
    if (bias) v += bias[c];
    dst[i] = v;
  }
}

// dst[o][r][s][i] = src[r][s][i][o]; one thread per destination element.
template <typename T>
__global__ void hwio_to_ohwi_kernel(const float* src, T* dst, int64_t khw, int64_t ci, int64_t co) {
  const int64_t n = khw * ci * co;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t in = i % ci, rs = (i / ci) % khw, o = i / (ci * khw);
    dst[i] = from_float<T>(src[(rs * ci + in) * co + o]);
  }
}

template <typename T>
__global__ void ohwi_to_hwio_kernel(const T* src, float* dst, int64_t khw, int64_t ci, int64_t co) {
  const int64_t n = khw * ci * co;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t o = i % co, in = (i / co) % ci, rs = i / (co * ci);
    dst[i] = to_float(src[(o * khw + rs) * ci + in]);
  }
}

__global__ void bn_relu_mask_kernel(const float* x, const float* dy, const float* mean,
                                    const float* inv_std, const float* gamma, const float* beta,
                                    float* dy_masked, int64_t rows, int64_t channels) {
  const int64_t n = rows * channels;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t c = i % channels;
    const float scale = gamma ? gamma[c] : 1.f;
    const float y = scale * (x[i] - mean[c]) * inv_std[c] + beta[c];
    dy_masked[i] = y > 0.f ? dy[i] : 0.f;
  }
}

__global__ void set_u64_kernel(uint64_t* cell, uint64_t value) { *cell = value; }

}  // namespace

cudaError_t launch_fill(float* y, float value, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  fill_kernel<<<grid_for(count), kBlock, 0, stream>>>(y, value, count);
  return cudaGetLastError();
}

cudaError_t launch_add_inplace(float* y, const float* x, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  add_inplace_kernel<<<grid_for(count), kBlock, 0, stream>>>(y, x, count);
  return cudaGetLastError();
}

cudaError_t launch_axpy(float a, const float* x, float* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  axpy_kernel<<<grid_for(count), kBlock, 0, stream>>>(a, x, y, count);
  return cudaGetLastError();
}

cudaError_t launch_relu_forward(const float* x, float* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  relu_forward_kernel<<<grid_for(count), kBlock, 0, stream>>>(x, y, count);
  return cudaGetLastError();
}

cudaError_t launch_relu_backward(const float* y, const float* dy, float* dx, int64_t count,
                                 cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  relu_backward_kernel<<<grid_for(count), kBlock, 0, stream>>>(y, dy, dx, count);
  return cudaGetLastError();
}

cudaError_t launch_add_forward(const float* a, const float* b, float* y, int64_t count, bool relu,
                               cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  add_forward_kernel<<<grid_for(count), kBlock, 0, stream>>>(a, b, y, count, relu);
  return cudaGetLastError();
}

cudaError_t launch_add_backward(const float* y, const float* dy, float* da, float* db,
                                int64_t count, bool relu, cudaStream_t stream) {
  if (count <= 0 || (!da && !db)) return cudaSuccess;
  add_backward_kernel<<<grid_for(count), kBlock, 0, stream>>>(y, dy, da, db, count, relu);
  return cudaGetLastError();
}

cudaError_t launch_copy_columns(const float* src, int64_t src_ld, int64_t src_offset, float* dst,
                                int64_t dst_ld, int64_t dst_offset, int64_t rows, int64_t cols,
                                cudaStream_t stream) {
  if (rows * cols <= 0) return cudaSuccess;
  copy_columns_kernel<<<grid_for(rows * cols), kBlock, 0, stream>>>(src, src_ld, src_offset, dst,
                                                                    dst_ld, dst_offset, rows, cols);
  return cudaGetLastError();
}

cudaError_t launch_global_avg_pool_forward(const float* x, float* y, Nhwc s, cudaStream_t stream) {
  if (s.n * s.c <= 0) return cudaSuccess;
  gap_forward_kernel<<<grid_for(s.n * s.c), kBlock, 0, stream>>>(x, y, s);
  return cudaGetLastError();
}

cudaError_t launch_global_avg_pool_backward(const float* dy, float* dx, Nhwc s,
                                            cudaStream_t stream) {
  if (s.numel() <= 0) return cudaSuccess;
  gap_backward_kernel<<<grid_for(s.numel()), kBlock, 0, stream>>>(dy, dx, s);
  return cudaGetLastError();
}

cudaError_t launch_dropout(const float* x, float* y, int64_t count, int64_t per_mask,
                           float keep_prob, uint64_t seed, const uint64_t* seed_cell,
                           cudaStream_t stream) {
  if (count <= 0 || per_mask <= 0) return cudaSuccess;
  // Same threshold as backend/cpu/dropout_mask.h: keep_prob in 24-bit fixed point.
  uint32_t threshold = static_cast<uint32_t>(keep_prob * 16777216.f);
  if (keep_prob >= 1.f) threshold = uint32_t{1} << 24;
  if (keep_prob <= 0.f) threshold = 0;
  dropout_kernel<<<grid_for(count), kBlock, 0, stream>>>(x, y, count, per_mask, keep_prob,
                                                         threshold, seed, seed_cell);
  return cudaGetLastError();
}

cudaError_t launch_bias_add(float* y, const float* bias, int64_t rows, int64_t channels,
                            cudaStream_t stream) {
  if (rows * channels <= 0) return cudaSuccess;
  bias_add_kernel<<<grid_for(rows * channels), kBlock, 0, stream>>>(y, bias, rows, channels);
  return cudaGetLastError();
}

cudaError_t launch_bias_grad(const float* dy, float* db, int64_t rows, int64_t channels,
                             cudaStream_t stream) {
  if (channels <= 0) return cudaSuccess;
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((channels + 31) / 32));
  bias_grad_kernel<<<grid, block, 0, stream>>>(dy, db, rows, channels);
  return cudaGetLastError();
}

cudaError_t launch_pad_convert(const float* src, Nhwc s, void* dst, ElemType dst_type,
                               int64_t dst_h, int64_t dst_w, int top, int left,
                               cudaStream_t stream) {
  const int64_t n = s.n * dst_h * dst_w * s.c;
  if (n <= 0) return cudaSuccess;
  if (dst_type == ElemType::bf16)
    pad_convert_kernel<<<grid_for(n), kBlock, 0, stream>>>(src, s, static_cast<__nv_bfloat16*>(dst),
                                                           dst_h, dst_w, top, left);
  else
    pad_convert_kernel<<<grid_for(n), kBlock, 0, stream>>>(src, s, static_cast<float*>(dst), dst_h,
                                                           dst_w, top, left);
  return cudaGetLastError();
}

cudaError_t launch_crop_convert(const void* src, ElemType src_type, int64_t src_h, int64_t src_w,
                                int top, int left, float* dst, Nhwc s, const float* bias,
                                cudaStream_t stream) {
  if (s.numel() <= 0) return cudaSuccess;
  if (src_type == ElemType::bf16)
    crop_convert_kernel<<<grid_for(s.numel()), kBlock, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(src), src_h, src_w, top, left, dst, s, bias);
  else
    crop_convert_kernel<<<grid_for(s.numel()), kBlock, 0, stream>>>(
        static_cast<const float*>(src), src_h, src_w, top, left, dst, s, bias);
  return cudaGetLastError();
}

cudaError_t launch_hwio_to_ohwi(const float* src, void* dst, ElemType dst_type, int64_t kh,
                                int64_t kw, int64_t ci, int64_t co, cudaStream_t stream) {
  const int64_t n = kh * kw * ci * co;
  if (n <= 0) return cudaSuccess;
  if (dst_type == ElemType::bf16)
    hwio_to_ohwi_kernel<<<grid_for(n), kBlock, 0, stream>>>(src, static_cast<__nv_bfloat16*>(dst),
                                                            kh * kw, ci, co);
  else
    hwio_to_ohwi_kernel<<<grid_for(n), kBlock, 0, stream>>>(src, static_cast<float*>(dst), kh * kw,
                                                            ci, co);
  return cudaGetLastError();
}

cudaError_t launch_ohwi_to_hwio(const void* src, ElemType src_type, float* dst, int64_t kh,
                                int64_t kw, int64_t ci, int64_t co, cudaStream_t stream) {
  const int64_t n = kh * kw * ci * co;
  if (n <= 0) return cudaSuccess;
  if (src_type == ElemType::bf16)
    ohwi_to_hwio_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const __nv_bfloat16*>(src),
                                                            dst, kh * kw, ci, co);
  else
    ohwi_to_hwio_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const float*>(src), dst,
                                                            kh * kw, ci, co);
  return cudaGetLastError();
}

cudaError_t launch_bn_relu_mask(const float* x, const float* dy, const float* mean,
                                const float* inv_std, const float* gamma, const float* beta,
                                float* dy_masked, int64_t rows, int64_t channels,
                                cudaStream_t stream) {
  if (rows * channels <= 0) return cudaSuccess;
  bn_relu_mask_kernel<<<grid_for(rows * channels), kBlock, 0, stream>>>(
      x, dy, mean, inv_std, gamma, beta, dy_masked, rows, channels);
  return cudaGetLastError();
}

cudaError_t launch_set_u64(uint64_t* cell, uint64_t value, cudaStream_t stream) {
  set_u64_kernel<<<1, 1, 0, stream>>>(cell, value);
  return cudaGetLastError();
}

}  // namespace ic::cuda
