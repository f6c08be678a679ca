#include "train/ema.h"

#include <algorithm>

namespace ic {

float ema_decay(float decay, int64_t num_updates) {
  const auto n = static_cast<float>(num_updates);
  return std::min(decay, (1.0f + n) / (10.0f + n));
}

void ema_update_host(float* shadow, const float* value, size_t count, float decay) {
  const float one_minus_decay = 1.0f - decay;
  for (size_t i = 0; i < count; ++i) shadow[i] -= one_minus_decay * (shadow[i] - value[i]);
}

}  // namespace ic
