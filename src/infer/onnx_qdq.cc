#include "infer/onnx_qdq.h"

#include <algorithm>
#include <cmath>

#include "backend/ops.h"

namespace ic {

namespace {

bool positive_finite(float v) { return v > 0.f && std::isfinite(v); }

}  // namespace

std::vector<float> channel_weight_scales(std::span<const float> weights, int64_t channels,
                                         ChannelAxis axis) {
  const auto c = static_cast<size_t>(channels);
  const size_t per_channel = c == 0 ? 0 : weights.size() / c;
  std::vector<float> largest(c, 0.f);
  for (size_t k = 0; k < weights.size(); ++k) {
    const size_t channel = axis == ChannelAxis::outer ? k / per_channel : k % c;
    largest[channel] = std::max(largest[channel], std::fabs(weights[k]));
  }
  for (float& s : largest) s = s > 0.f ? s / static_cast<float>(kInt8WeightMax) : 1.f;
  return largest;
}

std::vector<int8_t> quantize_weights(std::span<const float> weights, std::span<const float> scales,
                                     ChannelAxis axis) {
  const size_t channels = scales.size();
  const size_t per_channel = channels == 0 ? 0 : weights.size() / channels;
  std::vector<int8_t> q(weights.size());
  const auto top = static_cast<float>(kInt8WeightMax);
  for (size_t k = 0; k < weights.size(); ++k) {
    const size_t c = axis == ChannelAxis::outer ? k / per_channel : k % channels;
    const float level = std::nearbyint(weights[k] / scales[c]);
    q[k] = static_cast<int8_t>(std::clamp(level, -top, top));
  }
  return q;
}

float activation_clip_max(float input_scale) {
  return static_cast<float>(kInt8ActivationMax) * input_scale;
}

Status check_layer_quantization(const std::string& layer, const LayerQuantization& q,
                                int64_t channels) {
  if (!positive_finite(q.input_scale))
    return invalid_argument("ONNX export: int8 layer ", layer, ": input scale ", q.input_scale,
                            " is not positive and finite");
  if (q.weight_scales.size() != static_cast<size_t>(channels))
    return invalid_argument("ONNX export: int8 layer ", layer, " has ", q.weight_scales.size(),
                            " weight scales for ", channels, " output channels");
  for (float s : q.weight_scales)
    if (!positive_finite(s))
      return invalid_argument("ONNX export: int8 layer ", layer, ": weight scale ", s,
                              " is not positive and finite");
  return {};
}

}  // namespace ic
