// Shared pieces of the CUDA backend: status checks that turn every CUDA, cuDNN and cuBLAS
// failure into a Status naming the call and its file:line; the context (device, stream,
// library handles) every kernel runs on; RAII holders for cuDNN descriptors; and the
// kernel factories, one per op family.
//
// What each kernel's backward reads besides its output gradients (the same list as the CPU
// backend, so the graph keeps the same values alive):
//   conv2d, dense:          inputs[0] (x) and params (weights)
//   batch_norm:             inputs[0] (x), params, saved (cuDNN's batch mean and 1/stddev)
//   relu, add+relu:         outputs[0] (y)
//   max_pool:               saved (argmax per output element, int32)
//   softmax_cross_entropy:  inputs (logits, labels)
//   avg_pool, global_avg_pool, concat, dropout, reshape, add: nothing
//
// Kernels hold a reference to the CudaContext: a backend must outlive its kernels.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <type_traits>

#include "backend/backend.h"
#include "backend/cuda/cuda_kernels.h"

namespace ic::cuda {

Status check_call(cudaError_t result, const char* call, const char* file, int line);
Status check_call(cudnnStatus_t result, const char* call, const char* file, int line);
Status check_call(cublasStatus_t result, const char* call, const char* file, int line);

}  // namespace ic::cuda

// A Status for one CUDA / cuDNN / cuBLAS call: OK, or "cudnnConvolutionForward(...) failed:
// CUDNN_STATUS_BAD_PARAM (...) at cuda_conv.cc:123".
#define IC_CUDA_CHECK(call) ::ic::cuda::check_call((call), #call, __FILE__, __LINE__)
// Inside forward()/backward() (which return nothing): keeps the failure in the context.
#define IC_CUDA_RECORD(ctx, call) (ctx).record(IC_CUDA_CHECK(call))

namespace ic::cuda {

// Everything a kernel needs to enqueue work. Owned by the backend.
struct CudaContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  bool allow_tf32 = true;
  bool capturing = false;         // true between begin_capture() and end_capture()
  uint64_t* seed_cell = nullptr;  // device: the dropout seed a captured graph reads
  Status first_error;             // the first failure of an asynchronous call

  // Keeps the first error (later ones are usually its consequences).
  void record(const Status& status) {
    if (!status.ok() && first_error.ok()) first_error = status;
  }
  // Where dropout reads its seed: a device cell while capturing, else the argument.
  const uint64_t* capture_seed() const { return capturing ? seed_cell : nullptr; }
};

// cudaMalloc'd memory (never managed memory), freed with cudaFree.
Result<DeviceBuffer> device_alloc(size_t bytes);

// cuDNN descriptors, destroyed with their owners.
struct TensorDescDeleter {
  void operator()(cudnnTensorStruct* d) const { cudnnDestroyTensorDescriptor(d); }
};
struct FilterDescDeleter {
  void operator()(cudnnFilterStruct* d) const { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDescDeleter {
  void operator()(cudnnConvolutionStruct* d) const { cudnnDestroyConvolutionDescriptor(d); }
};
using TensorDesc = std::unique_ptr<cudnnTensorStruct, TensorDescDeleter>;
using FilterDesc = std::unique_ptr<cudnnFilterStruct, FilterDescDeleter>;
using ConvDesc = std::unique_ptr<cudnnConvolutionStruct, ConvDescDeleter>;

// An NHWC tensor descriptor for [n,h,w,c] of `type`.
Result<TensorDesc> nhwc_desc(int64_t n, int64_t h, int64_t w, int64_t c, cudnnDataType_t type);

// Sub-buffers of one workspace or saved block, each 256-byte aligned. Offsets are planned
// at compile time, pointers resolved at bind time.
class Carve {
 public:
  size_t add(size_t bytes) {
    const size_t at = total_;
    total_ += (bytes + 255) / 256 * 256;
    return at;
  }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};
inline void* at_offset(void* base, size_t offset) { return static_cast<char*>(base) + offset; }

inline Nhwc nhwc(const Shape& s) { return Nhwc{s.n(), s.h(), s.w(), s.c()}; }

// Kernel factories. Each returns an error for shapes it cannot handle.
Result<std::unique_ptr<OpKernel>> make_conv2d(const Conv2dDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_batch_norm(const BatchNormDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_pool2d(const Pool2dDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_dense(const DenseDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_relu(const ReluDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_add(const AddDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_global_avg_pool(const GlobalAvgPoolDesc& d,
                                                       CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_concat(const ConcatDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_dropout(const DropoutDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_softmax_cross_entropy(const SoftmaxCrossEntropyDesc& d,
                                                             CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_reshape(const ReshapeDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_activation(const ActivationDesc& d, CudaContext& ctx);
// The launchers' name for an activation (cuda_kernels.h keeps ops.h out of the .cu files).
ActFn act_fn(Activation function);
Result<std::unique_ptr<OpKernel>> make_channel_scale(const ChannelScaleDesc& d, CudaContext& ctx);
Result<std::unique_ptr<OpKernel>> make_pad(const PadDesc& d, CudaContext& ctx);

}  // namespace ic::cuda
