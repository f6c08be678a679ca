// The rule that keeps a timed bf16 convolution in bf16 or moves it to float32
// (conv_kernel.cc, timed_compute_type), on its own so that tests can hold it to numbers.
#pragma once

namespace ic::cpu {

// Whether `a` seconds clearly beat `b`: by 10% and by 10 microseconds (timing noise on a shared
// machine is several percent; squeeze-and-excitation convolutions take a few microseconds).
inline bool clearly_faster(double a, double b) { return a < 0.9 * b && b - a > 10e-6; }

// `bf16_seconds`: the layer's fastest bf16 plan on bf16 activations. `f32_seconds`: its fastest
// float32 plan on float32 activations. `f32_casts_seconds`: the two Casts that keeping it in
// float32 adds (its input to float32, its output back to bf16).
//
// Where bf16 multiply-adds do not outpace float32's (no AMX), most layers are float32 and a
// bf16 layer must clearly win to stay: float32 is the more accurate (the casts are not
// counted: the 10% margin stands for a bf16 island's).
//
// Where they do (`bf16_outpaces_f32`, AMX), most layers are bf16, a float32 layer is an island
// between two casts, and bf16 stays unless float32 with its casts clearly wins. Ties used to
// go to float32 here too, and layers within 10% of each other (EfficientNet-B0's 1x1
// convolutions from 24 and 40 channels, slow on AMX for their short dot products) then flipped
// from one compile to the next; and the casts, timed at the first batch size (1, in cache),
// cost more per image at batch 32.
inline bool keeps_bf16(double bf16_seconds, double f32_seconds, double f32_casts_seconds,
                       bool bf16_outpaces_f32) {
  const double f32_total = f32_seconds + f32_casts_seconds;
  if (bf16_outpaces_f32) return !clearly_faster(f32_total, bf16_seconds);
  return clearly_faster(bf16_seconds, f32_total);
}

}  // namespace ic::cpu
