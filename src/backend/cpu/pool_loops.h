// Max and average pooling of float32 NHWC activations by our own loops, for the CPUs where
// oneDNN 2.6's pooling is slow: without AVX-512 its NHWC and blocked kernels both move 3-4 GB/s
// (2-core AMD EPYC Zen 2, batch 32: Inception v3's 3x3 stride-2 max pool on 147x147x64 took 60
// ms forward and 63 ms backward, where these loops take 10 and 14). Each output pixel's window
// is reduced channel by channel, 8 channels to an AVX2 vector; training max pooling keeps the
// window position of each maximum (one byte) for backward, which routes each output gradient to
// it; average pooling divides by the number of real (unpadded) inputs in the window, as TF.
// Ties go to the first maximum in the window's row-major order, as TF's and oneDNN's do.
#pragma once

#include <cstdint>

#include "backend/ops.h"

namespace ic::cpu {

// A pooling's windows (ops.h's pool_windows) and its input's size.
struct PoolLoopShape : PoolWindows {
  int64_t n = 0, h = 0, w = 0, c = 0;
};
PoolLoopShape pool_loop_shape(const Pool2dDesc& d);

// Whether make_pool2d runs `d` by these loops: float32 activations, a window of at most 255
// positions (the one-byte argmax), and oneDNN without its AVX-512 kernels (the CPUs measured).
bool pool_loops_apply(const Pool2dDesc& d);

// y[n,oh,ow,c] = the window's maximum; argmax (y's size in bytes, or nullptr for forward only)
// gets its row-major position in the window.
void max_pool_forward(const PoolLoopShape& s, const float* x, float* y, uint8_t* argmax);
// dx (overwritten) = each dy added at its window's argmax position.
void max_pool_backward(const PoolLoopShape& s, const float* dy, const uint8_t* argmax, float* dx);
// y = the mean of the window's real inputs.
void avg_pool_forward(const PoolLoopShape& s, const float* x, float* y);
// dx (overwritten) = each dy / (its window's real inputs) added at each of them.
void avg_pool_backward(const PoolLoopShape& s, const float* dy, float* dx);

}  // namespace ic::cpu
