// Exponential moving averages of the weights, as TF1's tf.train.ExponentialMovingAverage(
// decay, num_updates=global_step): each apply() uses decay_t = min(decay, (1+n)/(10+n)) (in
// float32) and shadow -= (1 - decay_t) * (shadow - value).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ic {

// min(decay, (1 + n) / (10 + n)) with n = float(num_updates), computed in float32 as TF does.
float ema_decay(float decay, int64_t num_updates);

// shadow[i] -= (1 - decay) * (shadow[i] - value[i]); the host reference of the device kernels.
void ema_update_host(float* shadow, const float* value, size_t count, float decay);

}  // namespace ic
