// A Backend that forwards every call to another one, for tests that change one behaviour of a
// real backend (report an asynchronous failure, report little free memory) and keep the rest.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"

namespace ic::testing {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  DeviceKind kind() const override { return inner_->kind(); }
  std::string description() const override { return inner_->description(); }
  Result<DeviceBuffer> allocate(size_t bytes) override { return inner_->allocate(bytes); }
  std::optional<size_t> available_memory() const override { return inner_->available_memory(); }
  void upload(void* dst, const void* src, size_t bytes) override {
    inner_->upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    inner_->download(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override { inner_->copy(dst, src, bytes); }
  void fill(float* dst, float value, size_t count) override { inner_->fill(dst, value, count); }
  void synchronize() override { inner_->synchronize(); }
  Result<std::unique_ptr<OpKernel>> compile(const OpDesc& desc) override {
    return inner_->compile(desc);
  }
  void add_inplace(float* y, const float* x, size_t count) override {
    inner_->add_inplace(y, x, count);
  }
  void axpy(float a, const float* x, float* y, size_t count) override {
    inner_->axpy(a, x, y, count);
  }
  void sum_squares(const float* x, size_t count, float* result) override {
    inner_->sum_squares(x, count, result);
  }
  void scale_add(float* y, float a, float b, const float* x, size_t count) override {
    inner_->scale_add(y, a, b, x, count);
  }
  void scale_add_square(float* y, float a, float b, const float* x, size_t count) override {
    inner_->scale_add_square(y, a, b, x, count);
  }
  void scale_add_over_root(float* y, float a, float b, const float* x, const float* z,
                           const RootDenominator& d, size_t count) override {
    inner_->scale_add_over_root(y, a, b, x, z, d, count);
  }
  void sum_squares_per_range(const float* x, std::span<const FlatRange> ranges,
                             double* host_sums) override {
    inner_->sum_squares_per_range(x, ranges, host_sums);
  }
  void ema_update(float* shadow, const float* value, size_t count, float decay) override {
    inner_->ema_update(shadow, value, count, decay);
  }
  Status status() override { return inner_->status(); }

 private:
  std::unique_ptr<Backend> inner_;
};

// The CPU backend behind a ForwardingBackend.
inline std::unique_ptr<Backend> cpu_backend_for_tests() {
  auto cpu = make_backend(BackendOptions{});
  return cpu.ok() ? std::move(cpu).value() : nullptr;
}

}  // namespace ic::testing
