// Mean softmax cross-entropy with TensorFlow's label smoothing (ops.h). One block per row;
// a second single-thread pass adds the rows in order, so the loss is deterministic.
//
// Per row, with m = max z, S = Σ exp(z - m), target t = onehot(label)(1-s) + s/C (Σt = 1):
//   loss_row = m + log S - (1-s) z_label - (s/C) Σ z
//   d loss / d z_j = weight / valid_rows * (exp(z_j - m)/S - t_j)
#include "backend/cuda/block_reduce.cuh"
#include "backend/cuda/cuda_kernels.h"

namespace ic::cuda {
namespace {

struct RowStats {
  float max, sum_exp, sum_z;
};

__device__ RowStats row_stats(const float* z, int64_t classes) {
  __shared__ float scratch[kBlock];
  float m = -3.402823466e38f;
  for (int64_t j = threadIdx.x; j < classes; j += kBlock) m = fmaxf(m, z[j]);
  m = block_reduce(m, scratch, Max{});
  float se = 0.f, sz = 0.f;
  for (int64_t j = threadIdx.x; j < classes; j += kBlock) {
    se += expf(z[j] - m);
    sz += z[j];
  }
  se = block_reduce(se, scratch, Sum{});
  sz = block_reduce(sz, scratch, Sum{});
  return RowStats{m, se, sz};
}

__device__ bool valid_label(int32_t label, int64_t classes) {
  return label >= 0 && label < classes;
}

__global__ void xent_rows_kernel(const float* logits, const int32_t* labels, int64_t classes,
                                 float smoothing, float* row_scratch) {
  const int64_t row = blockIdx.x;
  const int32_t label = labels[row];
  const float* z = logits + row * classes;
  const RowStats st = row_stats(z, classes);
  if (threadIdx.x != 0) return;
  if (!valid_label(label, classes)) {
    row_scratch[2 * row] = 0.f;
    row_scratch[2 * row + 1] = 0.f;
    return;
  }
  const float loss = st.max + logf(st.sum_exp) - (1.f - smoothing) * z[label] -
                     smoothing / static_cast<float>(classes) * st.sum_z;
  row_scratch[2 * row] = loss;
  row_scratch[2 * row + 1] = 1.f;
}

__global__ void xent_mean_kernel(const float* row_scratch, int64_t batch, float weight,
                                 float* loss) {
  float sum = 0.f, count = 0.f;
  for (int64_t r = 0; r < batch; ++r) {
    sum += row_scratch[2 * r];
    count += row_scratch[2 * r + 1];
  }
  *loss = count > 0.f ? weight * sum / count : 0.f;
}

__global__ void xent_backward_kernel(const float* logits, const int32_t* labels, int64_t batch,
                                     int64_t classes, float smoothing, float weight,
                                     float* dlogits) {
  __shared__ float scratch[kBlock];
  const int64_t row = blockIdx.x;
  float valid = 0.f;
  for (int64_t r = threadIdx.x; r < batch; r += kBlock)
    valid += valid_label(labels[r], classes) ? 1.f : 0.f;
  valid = block_reduce(valid, scratch, Sum{});
  const int32_t label = labels[row];
  const float* z = logits + row * classes;
  float* dz = dlogits + row * classes;
  if (!valid_label(label, classes)) {
    for (int64_t j = threadIdx.x; j < classes; j += kBlock) dz[j] = 0.f;
    return;
  }
  const RowStats st = row_stats(z, classes);
  const float scale = weight / valid;
  const float off = smoothing / static_cast<float>(classes);
  for (int64_t j = threadIdx.x; j < classes; j += kBlock) {
    const float target = (j == label ? 1.f - smoothing : 0.f) + off;
    dz[j] = scale * (expf(z[j] - st.max) / st.sum_exp - target);
  }
}

}  // namespace

cudaError_t launch_xent_forward(const float* logits, const int32_t* labels, int64_t batch,
                                int64_t classes, float smoothing, float weight, float* row_scratch,
                                float* loss, cudaStream_t stream) {
  if (batch > 0)
    xent_rows_kernel<<<static_cast<unsigned>(batch), kBlock, 0, stream>>>(logits, labels, classes,
                                                                          smoothing, row_scratch);
  xent_mean_kernel<<<1, 1, 0, stream>>>(row_scratch, batch, weight, loss);
  return cudaGetLastError();
}

cudaError_t launch_xent_backward(const float* logits, const int32_t* labels, int64_t batch,
                                 int64_t classes, float smoothing, float weight, float* dlogits,
                                 cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  xent_backward_kernel<<<static_cast<unsigned>(batch), kBlock, 0, stream>>>(
      logits, labels, batch, classes, smoothing, weight, dlogits);
  return cudaGetLastError();
}

}  // namespace ic::cuda
