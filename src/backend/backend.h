// The Backend interface: where the graph's ops run. One implementation per device kind
// (backend/cpu: oneDNN; backend/cuda: cuDNN + cuBLAS + own kernels). The graph plans all
// memory up front, so a backend only allocates arenas, moves bytes, and runs kernels that
// were prepared ("compiled") once per op with shapes known.
//
// Pointers passed to a backend are device pointers of that backend. On CUDA every call
// is asynchronous on the backend's stream unless it says it synchronises.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "core/status.h"

namespace ic {

enum class DeviceKind { cpu, cuda };

// Device memory owned by the backend that allocated it; freed on destruction.
class DeviceBuffer {
 public:
  using Deleter = void (*)(void*);
  DeviceBuffer() = default;
  DeviceBuffer(void* data, size_t bytes, Deleter deleter) : data_(data, deleter), bytes_(bytes) {}
  void* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_.get());
  }

 private:
  std::unique_ptr<void, Deleter> data_{nullptr, [](void*) {}};
  size_t bytes_ = 0;
};

// The pointers one compiled op works on, fixed for the life of a compiled graph (the
// memory plan is static). Each list follows the order documented on the op's Desc in
// ops.h. A null entry in input_grads means that gradient is not needed.
struct OpBindings {
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  std::vector<void*> params;  // trainable: weights, biases, beta, gamma
  std::vector<void*> state;   // non-trainable: moving_mean, moving_variance
  void* saved = nullptr;      // saved_bytes(), written by forward, read by backward
  void* workspace = nullptr;  // workspace_bytes(), scratch during one call
  // Training graphs only.
  std::vector<const void*> output_grads;
  std::vector<void*> input_grads;  // written (=), never accumulated
  std::vector<void*> param_grads;  // written (=), in the order of params
};

// What changes from step to step.
struct StepContext {
  uint64_t seed = 0;  // dropout masks: a function of (seed, element index)
  int64_t step = 0;
};

// One op prepared for fixed shapes. forward/backward allocate nothing.
class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual size_t workspace_bytes() const { return 0; }
  virtual size_t saved_bytes() const { return 0; }
  // What backward reads besides output_grads, params and saved: the graph keeps those
  // buffers alive from forward until this kernel's backward. The default keeps both; a
  // kernel that says less lets the memory planner reuse the bytes sooner.
  struct BackwardReads {
    bool inputs = true;
    bool outputs = true;
  };
  virtual BackwardReads backward_reads() const { return {}; }
  // Which implementation the backend chose, for logs and tests ("jit:avx2 direct nhwc");
  // empty where there is only one.
  virtual std::string implementation() const { return {}; }
  // Called once, after memory planning, before the first forward.
  virtual Status bind(const OpBindings& bindings) = 0;
  virtual void forward(const StepContext& ctx) = 0;
  virtual void backward(const StepContext& ctx) = 0;
};

// A range of an arena, in elements: one variable of the trainable arena, say.
struct FlatRange {
  size_t offset = 0;
  size_t count = 0;
};

// The denominator of scale_add_over_root: sqrt(z + inner_epsilon) / divisor + outer_epsilon.
// RMSProp takes its epsilon inside the root (inner_epsilon = epsilon, divisor 1, outer 0);
// Adam outside, after its bias correction (inner 0, divisor sqrt(1 - beta2^t), outer epsilon).
struct RootDenominator {
  float inner_epsilon = 0.f;
  float divisor = 1.f;
  float outer_epsilon = 0.f;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string description() const = 0;  // "cpu: oneDNN 2.6, 2 threads"
  // Whether convolutions asked for bf16 (Conv2dDesc::compute) really compute in bf16; false:
  // they compute in float32, so bf16 cannot be faster (serve's --precision=auto reads it).
  virtual bool has_native_bf16() const { return false; }
  // Whether every kernel takes its activations in bf16 where a desc's `activations` says so
  // (ops.h), so an inference graph can hold them in bf16 between ops (graph/precision_pass.h).
  virtual bool supports_bf16_activations() const { return false; }
  // The type a forward-only kernel of `d` computes in. A backend that chooses a convolution's
  // implementation by timing (Conv2dDesc::time_algorithms) may find a bf16 one faster in float32
  // and say so here (timing it now if it has not); the inference graph then keeps that layer's
  // activations in float32 as well (graph/precision_pass.h). Elsewhere: the type asked.
  virtual Result<DType> conv_compute_type(const Conv2dDesc& d) { return d.compute; }
  // Whether compile() takes `d`, a pointwise convolution with a depthwise one fused after it
  // (Conv2dDesc::fused_depthwise); the inference graph fuses only where this says yes.
  virtual bool fuses_depthwise(const Conv2dDesc&) { return false; }
  // Whether `d`, a forward-only int8 convolution (Conv2dDesc::int8 set, float32 output), is
  // worth its int8. A backend that chooses implementations by timing may find the float32
  // convolution it replaces faster and say no here (timing both now if it has not): on a CPU
  // without VNNI a u8 x s8 pair instruction does no more multiply-adds a cycle than float32's
  // FMAs, and float32 has Winograd. The inference graph then leaves that layer in float32
  // (graph/quantize_pass.h). Elsewhere: yes.
  virtual Result<bool> int8_conv_pays(const Conv2dDesc&) { return true; }

  // Memory -----------------------------------------------------------------------------
  virtual Result<DeviceBuffer> allocate(size_t bytes) = 0;  // 64-byte aligned at least
  // Bytes that can still be allocated, as the system reports them (CPU: the memory the kernel
  // and the cgroup leave to this process; GPU: free device memory); nullopt when unknown.
  // Used to refuse a batch that cannot fit before allocating it, with the figures.
  virtual std::optional<size_t> available_memory() const { return std::nullopt; }
  virtual void upload(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, size_t bytes) = 0;  // synchronises
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void fill(float* dst, float value, size_t count) = 0;
  virtual void synchronize() = 0;

  // Ops ----------------------------------------------------------------------------------
  virtual Result<std::unique_ptr<OpKernel>> compile(const OpDesc& desc) = 0;

  // Flat float32 arithmetic over arenas ----------------------------------------------
  virtual void add_inplace(float* y, const float* x, size_t count) = 0;       // y += x
  virtual void axpy(float a, const float* x, float* y, size_t count) = 0;     // y += a*x
  virtual void sum_squares(const float* x, size_t count, float* result) = 0;  // *result = Σx²
  // The optimizers' arithmetic (train/optimizer.cc writes every update with these, so a new
  // optimizer needs no new kernel). Elementwise over `count` floats: one variable or a whole
  // arena. The CPU computes each in float32 exactly as written, left to right, so an update
  // composed of them is bit for bit the same as the same formula in one loop; the GPU may fuse
  // a multiply and an add (nvcc's default), within an ulp or so of the CPU.
  // y = a*y + b*x (momentum accumulators, Adam's first moment, p -= lr*accum)
  virtual void scale_add(float* y, float a, float b, const float* x, size_t count) = 0;
  // y = a*y + b*x*x (RMSProp's mean square, Adam's second moment)
  virtual void scale_add_square(float* y, float a, float b, const float* x, size_t count) = 0;
  // y = a*y + b*x / (sqrt(z + d.inner_epsilon) / d.divisor + d.outer_epsilon)
  // (RMSProp's momentum, Adam's step)
  virtual void scale_add_over_root(float* y, float a, float b, const float* x, const float* z,
                                   const RootDenominator& d, size_t count) = 0;
  // host_sums[r] = Σ x² over ranges[r] of x (per-variable norms: LARS's trust ratio), each
  // accumulated in double in a fixed order. Synchronises: the sums are on the host on return.
  virtual void sum_squares_per_range(const float* x, std::span<const FlatRange> ranges,
                                     double* host_sums) = 0;
  // shadow -= (1-decay)*(shadow - value)
  virtual void ema_update(float* shadow, const float* value, size_t count, float decay) = 0;

  // Errors and step capture (CUDA) -----------------------------------------------------
  // The first failure of an asynchronous call (a kernel launch, a cuDNN call inside
  // forward()) since the backend was made; CPU backends fail synchronously and stay OK.
  virtual Status status() { return Status(); }
  // Step capture (CUDA graphs): the calls between begin_capture() and end_capture() are
  // recorded, not run; replay(ctx) runs the recording again with ctx's dropout seed, at a
  // fraction of the launch cost. Pointers and every other argument are frozen at capture.
  virtual bool supports_capture() const { return false; }
  virtual Status begin_capture() { return error(description(), ": no step capture"); }
  virtual Status end_capture() { return error(description(), ": no step capture"); }
  virtual Status replay(const StepContext& ctx) {
    (void)ctx;
    return error(description(), ": no step capture");
  }
};

// For OpKernel::bind implementations: the lists have the expected lengths and no null
// pointers; the error names the op.
Status check_bindings(const char* op, const OpBindings& bindings, size_t inputs, size_t outputs,
                      size_t params, size_t state);

struct BackendOptions {
  DeviceKind kind = DeviceKind::cpu;
  int device_index = 0;  // cuda:N
  int num_threads = 0;   // cpu: 0 = all cores
  // cuda: float32 convolutions and GEMMs may use TF32 tensor cores (PyTorch's cuDNN
  // default). Off gives IEEE float32 products (the tests compare against the CPU with it off).
  bool allow_tf32 = true;
};

// The backend for `options`, or an error saying why it is unavailable (no GPU, no CUDA build).
Result<std::unique_ptr<Backend>> make_backend(const BackendOptions& options);

// Implementations, one per library (backend/cpu, backend/cuda).
Result<std::unique_ptr<Backend>> make_cpu_backend(const BackendOptions& options);
Result<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions& options);

}  // namespace ic
