// Shared by the CUDA tests: a GPU backend, or a visible skip where there is none.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ic::testing {

// The CUDA backend on cuda:0 with IEEE float32 products (no TF32), so float32 results can
// be compared tightly with the CPU. Null when this machine or build has no GPU.
inline std::unique_ptr<Backend> cuda_backend_or_null(std::string* why) {
  BackendOptions options;
  options.kind = DeviceKind::cuda;
  options.allow_tf32 = false;
  auto backend = make_cuda_backend(options);
  if (!backend.ok()) {
    *why = backend.status().message();
    return nullptr;
  }
  return std::move(backend).value();
}

// True for the errors that mean "no GPU here" rather than "the backend is broken".
inline bool is_no_gpu(const std::string& message) {
  return message.find("no GPU") != std::string::npos ||
         message.find("no usable GPU") != std::string::npos ||
         message.find("no CUDA backend") != std::string::npos;
}

}  // namespace ic::testing

// In a test body or SetUp(): `backend` becomes the GPU backend, or the test is skipped with
// "skipped: no GPU" (any other failure to start the backend fails the test).
#define IC_CUDA_BACKEND_OR_SKIP(backend)                       \
  do {                                                         \
    std::string ic_why_;                                       \
    backend = ::ic::testing::cuda_backend_or_null(&ic_why_);   \
    if (!backend) {                                            \
      if (::ic::testing::is_no_gpu(ic_why_))                   \
        GTEST_SKIP() << "skipped: no GPU (" << ic_why_ << ")"; \
      FAIL() << ic_why_;                                       \
    }                                                          \
  } while (0)
