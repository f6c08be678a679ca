// The rule that keeps a timed int8 convolution in int8 or moves it to float32 (conv_choice.cc,
// timed_int8_pays), on its own so that tests can hold it to numbers.
#pragma once

#include "backend/cpu/bf16_choice.h"

namespace ic::cpu {

// int8 is what was asked for, so a layer stays int8 unless its fastest float32 plan is clearly
// faster (clearly_faster: by 10% and by 10 microseconds). With a bare comparison, layers whose
// two times lay within the timing's noise flipped from one process to the next, and with them
// the answers for a few near-tie images (Fashion-MNIST's Inception v3 on a 2-core AMD Zen 2: one
// layer of 94 in float32 in 3 of 10 `classify` processes; 9124 to 9139 right of 10000). The
// margin also stands for the Quantize that a float32 layer adds before the next int8 one.
inline bool keeps_int8(double int8_seconds, double f32_seconds) {
  return !clearly_faster(f32_seconds, int8_seconds);
}

}  // namespace ic::cpu
