// Quantize: f32 -> u8 at one scale (int8 inference), y = clamp(round_half_even(x / scale), 0,
// max_level). x / scale is computed as x * (1 / scale) in f32 everywhere, so every backend and
// the tests' reference agree to the bit; rounding is to nearest, ties to even.
//
// The loop clamps first and rounds after: the bounds are integers, so that is the same as
// rounding then clamping, and a value in [0, 255] rounds to nearest-even by adding and
// subtracting 2^23 (f32 keeps no fraction there). No library call (nearbyint is one without
// SSE4.1), so the compiler vectorizes it (vector_loops.h: for this CPU's widest vectors). NaN
// becomes 0.
//
// A u8 source (requantize) has only 256 values: the kernel quantizes each one's float32 value,
// level * source_scale, once with the same loop, and then looks every element up in that table.
#include <array>
#include <cmath>
#include <optional>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/vector_loops.h"

namespace ic::cpu {
namespace {

class QuantizeKernel final : public OpKernel {
 public:
  explicit QuantizeKernel(const QuantizeDesc& d)
      : count_(d.input.numel()),
        inverse_scale_(1.f / d.scale),
        max_level_(static_cast<float>(d.max_level)) {
    if (d.source != DType::u8) return;
    std::array<float, 256> levels{};
    for (size_t k = 0; k < levels.size(); ++k) levels[k] = static_cast<float>(k) * d.source_scale;
    table_.emplace();
    quantize_to_u8(levels.data(), table_->data(), static_cast<int64_t>(levels.size()),
                   inverse_scale_, max_level_);
  }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("quantize", b, 1, 1, 0, 0));
    b_ = b;
    return Status();
  }
  void forward(const StepContext&) override {
    auto* y = static_cast<uint8_t*>(b_.outputs[0]);
    if (table_) {
      const auto* x = static_cast<const uint8_t*>(b_.inputs[0]);
      const std::array<uint8_t, 256>& table = *table_;
      chunked(count_, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) y[i] = table[x[i]];
      });
      return;
    }
    const auto* x = static_cast<const float*>(b_.inputs[0]);
    chunked(count_, [&](int64_t s, int64_t e) {
      quantize_to_u8(x + s, y + s, e - s, inverse_scale_, max_level_);
    });
  }
  void backward(const StepContext&) override {}

 private:
  int64_t count_;
  float inverse_scale_, max_level_;
  std::optional<std::array<uint8_t, 256>> table_;  // u8 source: every level's answer
  OpBindings b_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_quantize(const QuantizeDesc& d) {
  if (!(d.scale > 0.f) || !std::isfinite(d.scale))
    return invalid_argument("quantize: scale ", d.scale, " is not positive and finite");
  if (d.max_level < 1 || d.max_level > 255)
    return invalid_argument("quantize: max_level ", d.max_level, " is not in [1, 255]");
  if (d.source != DType::f32 && d.source != DType::u8)
    return invalid_argument("quantize: a ", dtype_name(d.source), " source (f32 or u8 only)");
  if (d.source == DType::u8 && (!(d.source_scale > 0.f) || !std::isfinite(d.source_scale)))
    return invalid_argument("quantize: source scale ", d.source_scale,
                            " is not positive and finite");
  return std::unique_ptr<OpKernel>(std::make_unique<QuantizeKernel>(d));
}

}  // namespace ic::cpu
