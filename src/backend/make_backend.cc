#include "backend/backend.h"

namespace ic {

#ifndef IC_HAVE_CUDA
Result<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions&) {
  return error(
      "this build of inception.cpp has no CUDA backend (configure with -DIC_WITH_CUDA=ON "
      "where nvcc and cuDNN are installed)");
}
#endif

Result<std::unique_ptr<Backend>> make_backend(const BackendOptions& options) {
  switch (options.kind) {
    case DeviceKind::cpu: return make_cpu_backend(options);
    case DeviceKind::cuda: return make_cuda_backend(options);
  }
  return error("unknown device kind");
}

}  // namespace ic
