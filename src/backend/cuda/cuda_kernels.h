// Launchers for our own CUDA kernels (the .cu files in this folder). Plain C++ declarations
// so the .cc files need no nvcc; every launcher enqueues on `stream` and returns the launch
// status (cudaGetLastError), which the caller turns into a Status.
//
// Shapes are NHWC, counts are element counts. bf16 buffers are passed as void* with an
// ElemType beside them.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/pool_windows.h"

namespace ic::cuda {

enum class ElemType { f32, bf16 };

// An NHWC activation's dimensions.
struct Nhwc {
  int64_t n = 0, h = 0, w = 0, c = 0;
  constexpr int64_t numel() const { return n * h * w * c; }  // constexpr: usable in kernels
};

// Flat float32 arithmetic ---------------------------------------------------------------------
cudaError_t launch_fill(float* y, float value, int64_t count, cudaStream_t stream);
cudaError_t launch_add_inplace(float* y, const float* x, int64_t count, cudaStream_t stream);
cudaError_t launch_axpy(float a, const float* x, float* y, int64_t count, cudaStream_t stream);
// Writes Σx² (accumulated in double, fixed order: deterministic) to *result. `partials`
// holds kSumSquaresBlocks doubles of scratch.
constexpr int kSumSquaresBlocks = 256;
cudaError_t launch_sum_squares(const float* x, int64_t count, double* partials, float* result,
                               cudaStream_t stream);
// The optimizers' arithmetic (backend.h): y = a*y + b*x; y = a*y + b*x*x;
// y = a*y + b*x / (sqrt(z + inner_epsilon) / divisor + outer_epsilon).
cudaError_t launch_scale_add(float* y, float a, float b, const float* x, int64_t count,
                             cudaStream_t stream);
cudaError_t launch_scale_add_square(float* y, float a, float b, const float* x, int64_t count,
                                    cudaStream_t stream);
cudaError_t launch_scale_add_over_root(float* y, float a, float b, const float* x, const float* z,
                                       float inner_epsilon, float divisor, float outer_epsilon,
                                       int64_t count, cudaStream_t stream);
// sums[r] = Σ x² over the r-th range, ranges holding (offset, count) pairs on the device, in
// double (one block per range, fixed order: deterministic).
cudaError_t launch_sum_squares_per_range(const float* x, const int64_t* ranges, int64_t range_count,
                                         double* sums, cudaStream_t stream);
cudaError_t launch_ema(float* shadow, const float* value, int64_t count, float decay,
                       cudaStream_t stream);

// Elementwise ops -----------------------------------------------------------------------------
cudaError_t launch_relu_forward(const float* x, float* y, int64_t count, cudaStream_t stream);
// dx = dy * (y > 0)
cudaError_t launch_relu_backward(const float* y, const float* dy, float* dx, int64_t count,
                                 cudaStream_t stream);
// y = a + b, then max(y, 0) if relu.
cudaError_t launch_add_forward(const float* a, const float* b, float* y, int64_t count, bool relu,
                               cudaStream_t stream);
// da = db = dy (masked by y > 0 if relu); either output may be null.
cudaError_t launch_add_backward(const float* y, const float* dy, float* da, float* db,
                                int64_t count, bool relu, cudaStream_t stream);

// dst[r, dst_offset + j] = src[r, src_offset + j] for r < rows, j < cols, with row strides
// (in elements) src_ld and dst_ld: channel concat forward and its backward.
cudaError_t launch_copy_columns(const float* src, int64_t src_ld, int64_t src_offset, float* dst,
                                int64_t dst_ld, int64_t dst_offset, int64_t rows, int64_t cols,
                                cudaStream_t stream);

// y[n,c] = mean over h,w of x[n,h,w,c];  dx[n,h,w,c] = dy[n,c] / (h*w)
cudaError_t launch_global_avg_pool_forward(const float* x, float* y, Nhwc s, cudaStream_t stream);
cudaError_t launch_global_avg_pool_backward(const float* dy, float* dx, Nhwc s,
                                            cudaStream_t stream);

// Dropout with the CPU backend's mask (backend/cpu/dropout_mask.h, bit for bit). The seed
// is read from *seed_cell when it is not null (a captured CUDA graph), else `seed`.
// y = keep ? x / keep_prob : 0   (the backward is the same map applied to dy). Element i uses
// draw i / per_mask: 1 for dropout, an example's element count for drop-connect.
cudaError_t launch_dropout(const float* x, float* y, int64_t count, int64_t per_mask,
                           float keep_prob, uint64_t seed, const uint64_t* seed_cell,
                           cudaStream_t stream);

// ReLU6, sigmoid, swish (backend/ops.h's Activation), y = f(x); the backward reads x.
enum class ActFn { relu6, sigmoid, swish };
cudaError_t launch_activation_forward(const float* x, float* y, int64_t count, ActFn fn,
                                      cudaStream_t stream);
cudaError_t launch_activation_backward(const float* x, const float* dy, float* dx, int64_t count,
                                       ActFn fn, cudaStream_t stream);
// y[n,h,w,c] = x[n,h,w,c] * s[n,c]; backward dx = dy * s and ds[n,c] = Σ_hw dy * x (either
// may be null).
cudaError_t launch_channel_scale_forward(const float* x, const float* s, float* y, Nhwc d,
                                         cudaStream_t stream);
cudaError_t launch_channel_scale_backward(const float* x, const float* s, const float* dy,
                                          float* dx, float* ds, Nhwc d, cudaStream_t stream);

// y[p, c] += bias[c] for a [rows, channels] matrix.
cudaError_t launch_bias_add(float* y, const float* bias, int64_t rows, int64_t channels,
                            cudaStream_t stream);
// db[c] = Σ_p dy[p, c] (fixed summation order).
cudaError_t launch_bias_grad(const float* dy, float* db, int64_t rows, int64_t channels,
                             cudaStream_t stream);

// Layout and precision conversions (convolution staging) ------------------------------------
// dst [N, H+pad_h, W+pad_w, C] (type dst_type) = src [N,H,W,C] placed at (top, left), zeros
// around it. With no padding it is a plain conversion.
cudaError_t launch_pad_convert(const float* src, Nhwc s, void* dst, ElemType dst_type,
                               int64_t dst_h, int64_t dst_w, int top, int left,
                               cudaStream_t stream);
// dst [N,H,W,C] f32 = the window of src [N, src_h, src_w, C] (type src_type) at (top, left),
// plus bias[c] when bias is not null. src may equal dst when there is no padding.
cudaError_t launch_crop_convert(const void* src, ElemType src_type, int64_t src_h, int64_t src_w,
                                int top, int left, float* dst, Nhwc s, const float* bias,
                                cudaStream_t stream);
// Weights: HWIO [kh,kw,ci,co] (the arena) <-> KRSC = OHWI [co,kh,kw,ci] (cuDNN's NHWC filter).
cudaError_t launch_hwio_to_ohwi(const float* src, void* dst, ElemType dst_type, int64_t kh,
                                int64_t kw, int64_t ci, int64_t co, cudaStream_t stream);
cudaError_t launch_ohwi_to_hwio(const void* src, ElemType src_type, float* dst, int64_t kh,
                                int64_t kw, int64_t ci, int64_t co, cudaStream_t stream);

// Batch norm + ReLU backward's mask: dy_masked = dy * (gamma*(x-mean)*inv_std + beta > 0),
// recomputing the forward output from x and cuDNN's saved statistics. gamma may be null (1).
cudaError_t launch_bn_relu_mask(const float* x, const float* dy, const float* mean,
                                const float* inv_std, const float* gamma, const float* beta,
                                float* dy_masked, int64_t rows, int64_t channels,
                                cudaStream_t stream);

// Pooling (TensorFlow semantics, asymmetric padding allowed) --------------------------------
struct PoolGeometry : PoolWindows {
  Nhwc in;
};
// argmax[n,oh,ow,c] = h*W + w of the window's (first) maximum, for the backward.
cudaError_t launch_max_pool_forward(const float* x, float* y, int32_t* argmax,
                                    const PoolGeometry& g, cudaStream_t stream);
cudaError_t launch_max_pool_backward(const float* dy, const int32_t* argmax, float* dx,
                                     const PoolGeometry& g, cudaStream_t stream);
// Average over the window's in-image elements only (padding not counted).
cudaError_t launch_avg_pool_forward(const float* x, float* y, const PoolGeometry& g,
                                    cudaStream_t stream);
cudaError_t launch_avg_pool_backward(const float* dy, float* dx, const PoolGeometry& g,
                                     cudaStream_t stream);

// Softmax cross-entropy with label smoothing (ops.h) ----------------------------------------
// row_scratch holds 2*batch floats. Rows whose label is outside [0, classes) add nothing.
cudaError_t launch_xent_forward(const float* logits, const int32_t* labels, int64_t batch,
                                int64_t classes, float smoothing, float weight, float* row_scratch,
                                float* loss, cudaStream_t stream);
cudaError_t launch_xent_backward(const float* logits, const int32_t* labels, int64_t batch,
                                 int64_t classes, float smoothing, float weight, float* dlogits,
                                 cudaStream_t stream);

// Writes `value` to *cell on the stream (a captured graph's per-step seed).
cudaError_t launch_set_u64(uint64_t* cell, uint64_t value, cudaStream_t stream);

}  // namespace ic::cuda
