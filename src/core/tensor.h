// Shapes and element types. Activations are NHWC at every boundary the graph exposes;
// convolution kernels are HWIO (TF-slim's layout, so checkpoints match TensorFlow's).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace ic {

// i64 appears only in checkpoints (TF's int64 global_step); graph values use f32/bf16/i32, and
// u8 for the quantized activations of int8 inference. s8: int8 exports' quantized weights.
enum class DType : uint8_t { f32, bf16, i32, i64, u8, s8 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

// A tensor's dimensions, outermost first. A scalar has no dimensions.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int axis) const { return dims_[static_cast<size_t>(axis)]; }
  int64_t& operator[](int axis) { return dims_[static_cast<size_t>(axis)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const;
  bool operator==(const Shape& other) const = default;
  std::string str() const;  // "[32,299,299,3]"

  // NHWC accessors; valid for rank-4 shapes only.
  int64_t n() const { return dims_[0]; }
  int64_t h() const { return dims_[1]; }
  int64_t w() const { return dims_[2]; }
  int64_t c() const { return dims_[3]; }

 private:
  std::vector<int64_t> dims_;
};

// bfloat16 storage conversions (round to nearest even; a NaN stays a quiet NaN), shared by
// backends and tests. Inline: the CPU kernels' loops call them per element.
inline uint16_t float_to_bf16(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}
inline float bf16_to_float(uint16_t value) {
  return std::bit_cast<float>(static_cast<uint32_t>(value) << 16);
}

}  // namespace ic
