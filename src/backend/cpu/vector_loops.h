// Hot flat loops compiled three times, for AVX-512, AVX2 and the x86-64 baseline, the best one
// chosen when the program loads by the CPU's features (GCC's and clang's target_clones; see
// vector_loops.cc for why not by CPU model). The project builds for any
// x86-64, so without this the compiler vectorizes these loops for SSE2 only, about a third of
// the speed of AVX-512 for the float -> u8 conversion of quantize_to_u8.
// Each works on [0, count) of its arrays; callers split the work over threads.
#pragma once

#include <cstdint>

namespace ic::cpu {

// y = x < 0 ? 0 : x (a NaN stays NaN, as std::max(x, 0.f) keeps it). y may alias x.
void relu_f32(const float* x, float* y, int64_t count);
// The same on bfloat16 bits (compared as floats).
void relu_bf16(const uint16_t* x, uint16_t* y, int64_t count);
// The gradients of ReLU and ReLU6: dx = dy where lo < v <= hi, else 0 (v is ReLU's output, with
// hi = +inf, or ReLU6's input, with hi the float just below 6: TensorFlow's ReluGrad and
// Relu6Grad pass exactly there, infinities included). Written without a
// branch: a per-element branch on the sign of an activation is a coin toss for the predictor,
// and that made ReLU6's backward take a third of MobileNet v2's training step.
void masked_grad_f32(const float* v, const float* dy, float* dx, int64_t count, float lo, float hi);
void masked_grad_bf16(const uint16_t* v, const float* dy, float* dx, int64_t count, float lo,
                      float hi);
// sum[i] += x[r * stride + i] for each row r of `rows` in turn, i in [0, count): a column
// block of an [rows, stride] matrix summed in row order (global average pooling's sums).
void sum_rows_f32(const float* x, int64_t rows, int64_t stride, float* sum, int64_t count);
void sum_rows_bf16(const uint16_t* x, int64_t rows, int64_t stride, float* sum, int64_t count);
// y[i] = x[i] * s[i]; in bf16, computed in float and rounded to nearest even (NaN stays NaN).
void multiply_f32(const float* x, const float* s, float* y, int64_t count);
void multiply_bf16(const uint16_t* x, const uint16_t* s, uint16_t* y, int64_t count);
// y[i] = max(a[i] + b[i], floor), computed in float and rounded to nearest even (a NaN stays
// NaN); floor is -inf for a plain Add, 0 for Add+ReLU.
void add_bf16(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t count, float floor);
// y = clamp(round_half_even(x * inverse_scale), 0, top); NaN becomes 0 (quantize_kernel.cc).
void quantize_to_u8(const float* x, uint8_t* y, int64_t count, float inverse_scale, float top);

}  // namespace ic::cpu
