// The rule that keeps a timed bf16 convolution in bf16 or moves it to float32
// (conv_kernel.cc, timed_compute_type), on its own so that tests can hold it to numbers.
#pragma once

namespace ic::cpu {

// `bf16_seconds`: the layer's fastest bf16 plan on bf16 activations. `f32_seconds`: its fastest
// float32 plan on float32 activations. `f32_casts_seconds`: the two Casts that keeping it in
// float32 adds (its input to float32, its output back to bf16), counted where most layers stay
// bf16 (AMX) and 0 elsewhere. bf16 must win by 10% and by 10 microseconds: float32 is the more
// accurate, and ties (squeeze-and-excitation convolutions of a few microseconds) stay float32.
inline bool keeps_bf16(double bf16_seconds, double f32_seconds, double f32_casts_seconds) {
  const double f32_total = f32_seconds + f32_casts_seconds;
  return bf16_seconds < 0.9 * f32_total && f32_total - bf16_seconds > 10e-6;
}

}  // namespace ic::cpu
