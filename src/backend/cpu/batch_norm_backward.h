// Batch norm's backward (training: the batch's statistics) on bf16 activations, NHWC, with f32
// gradients, reading x in bf16 as it is. oneDNN 2.6's backward takes x and dy in one type, so a
// bf16 x had to be widened into an f32 copy first: on a 2-core AMX Xeon, Inception v3's bf16
// training step spent 86 ms in those copies and 220 ms in oneDNN's f32 backward, a memory-bound
// op reading and writing 26 bytes an element where this reads and writes 16.
//
// Per channel, over the rows (N*H*W), with xhat = (x - mean) / sqrt(variance + epsilon):
//   g      = dy, or 0 where the fused ReLU's output y = xhat*gamma + beta was not positive
//   dbeta  = sum g          dgamma = sum g*xhat
//   dx     = gamma / sqrt(variance + epsilon) * (g - dbeta/rows - xhat * dgamma/rows)
// y is recomputed from x in float, as the forward computes it (xhat, then the scale and shift),
// so the mask is the forward's wherever y's sign is not decided by its last rounding.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ic::cpu {

struct BatchNormBackwardArgs {
  const uint16_t* x = nullptr;      // [rows, channels], bf16
  const float* dy = nullptr;        // [rows, channels]
  float* dx = nullptr;              // [rows, channels]; null: not wanted
  const float* mean = nullptr;      // the batch's, [channels]
  const float* variance = nullptr;  // the batch's, biased, [channels]
  const float* gamma = nullptr;     // null: a scale of 1
  const float* beta = nullptr;      // [channels]
  float epsilon = 1e-3f;
  bool relu = false;  // the forward's fused ReLU
  int64_t rows = 0, channels = 0;
  float* dbeta = nullptr;   // [channels]
  float* dgamma = nullptr;  // [channels]; null: not wanted
};

// Floats of scratch memory batch_norm_backward_bf16 needs for `channels` on `threads` threads.
size_t batch_norm_backward_scratch_floats(int64_t channels, int threads);

// Runs on `threads` OpenMP threads, each on a fixed share of the rows, their sums added in
// thread order: the same answer every run on the same number of threads.
void batch_norm_backward_bf16(const BatchNormBackwardArgs& a, int threads, float* scratch);

}  // namespace ic::cpu
