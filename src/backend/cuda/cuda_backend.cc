// The CUDA Backend: one device, one stream, one cuDNN and one cuBLAS handle bound to it.
// Memory is cudaMalloc'd; flat arena arithmetic, the optimizers' included, runs in our own
// kernels (optimizer.cu); ops are compiled by the factories in cuda_common.h. Every call only
// enqueues work on the stream, except download(), synchronize() and sum_squares_per_range(),
// which wait for it.
// Failures of enqueued work are kept (CudaContext::record) and reported by status().
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cuda/cuda_common.h"

namespace ic::cuda {

Status check_call(cudaError_t result, const char* call, const char* file, int line) {
  if (result == cudaSuccess) return Status();
  return error(call, " failed: ", cudaGetErrorName(result), " (", cudaGetErrorString(result),
               ") at ", file, ":", line);
}

Status check_call(cudnnStatus_t result, const char* call, const char* file, int line) {
  if (result == CUDNN_STATUS_SUCCESS) return Status();
  char detail[256] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  return error(call, " failed: ", cudnnGetErrorString(result), " (", detail, ") at ", file, ":",
               line);
}

Status check_call(cublasStatus_t result, const char* call, const char* file, int line) {
  if (result == CUBLAS_STATUS_SUCCESS) return Status();
  return error(call, " failed: ", cublasGetStatusName(result), " (", cublasGetStatusString(result),
               ") at ", file, ":", line);
}

Result<DeviceBuffer> device_alloc(size_t bytes) {
  void* p = nullptr;
  const Status s = IC_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));  // 256-byte aligned
  if (!s.ok()) return s.with_context("cuda: allocating " + std::to_string(bytes) + " bytes");
  return DeviceBuffer(p, bytes, [](void* q) { cudaFree(q); });
}

Result<TensorDesc> nhwc_desc(int64_t n, int64_t h, int64_t w, int64_t c, cudnnDataType_t type) {
  cudnnTensorDescriptor_t raw = nullptr;
  IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnCreateTensorDescriptor(&raw)));
  TensorDesc desc(raw);
  IC_RETURN_IF_ERROR(IC_CUDA_CHECK(
      cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NHWC, type, static_cast<int>(n),
                                 static_cast<int>(c), static_cast<int>(h), static_cast<int>(w))));
  return desc;
}

namespace {

struct StreamDeleter {
  void operator()(CUstream_st* s) const { cudaStreamDestroy(s); }
};
struct CudnnDeleter {
  void operator()(cudnnContext* h) const { cudnnDestroy(h); }
};
struct CublasDeleter {
  void operator()(cublasContext* h) const { cublasDestroy(h); }
};
struct GraphDeleter {
  void operator()(CUgraph_st* g) const { cudaGraphDestroy(g); }
};
struct GraphExecDeleter {
  void operator()(CUgraphExec_st* g) const { cudaGraphExecDestroy(g); }
};

// cuBLAS allocates its own workspace lazily, which a captured graph cannot do: give it one.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

class CudaBackend final : public Backend {
 public:
  ~CudaBackend() override {
    if (ctx_.stream) cudaStreamSynchronize(ctx_.stream);  // nothing may still use our memory
  }

  static Result<std::unique_ptr<Backend>> create(const BackendOptions& options) {
    auto backend = std::unique_ptr<CudaBackend>(new CudaBackend());
    IC_RETURN_IF_ERROR(backend->init(options));
    return std::unique_ptr<Backend>(std::move(backend));
  }

  DeviceKind kind() const override { return DeviceKind::cuda; }
  std::string description() const override { return description_; }

  Result<DeviceBuffer> allocate(size_t bytes) override {
    IC_RETURN_IF_ERROR(use_device());
    return device_alloc(bytes);
  }
  std::optional<size_t> available_memory() const override {
    size_t free = 0, total = 0;
    if (cudaSetDevice(ctx_.device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess)
      return std::nullopt;
    return free;
  }
  // From pageable host memory the driver stages the copy, so the call returns once the
  // source has been read; from pinned memory it is fully asynchronous.
  void upload(void* dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return;
    ctx_.record(
        IC_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, ctx_.stream)));
  }
  void download(void* host_dst, const void* src, size_t bytes) override {
    if (bytes != 0)
      ctx_.record(IC_CUDA_CHECK(
          cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream)));
    synchronize();
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0 || dst == src) return;
    ctx_.record(
        IC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx_.stream)));
  }
  void fill(float* dst, float value, size_t count) override {
    ctx_.record(IC_CUDA_CHECK(launch_fill(dst, value, n(count), ctx_.stream)));
  }
  void synchronize() override { ctx_.record(IC_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream))); }

  Result<std::unique_ptr<OpKernel>> compile(const OpDesc& desc) override;

  void add_inplace(float* y, const float* x, size_t count) override {
    ctx_.record(IC_CUDA_CHECK(launch_add_inplace(y, x, n(count), ctx_.stream)));
  }
  void axpy(float a, const float* x, float* y, size_t count) override {
    ctx_.record(IC_CUDA_CHECK(launch_axpy(a, x, y, n(count), ctx_.stream)));
  }
  void sum_squares(const float* x, size_t count, float* result) override {
    ctx_.record(IC_CUDA_CHECK(
        launch_sum_squares(x, n(count), partials_.as<double>(), result, ctx_.stream)));
  }
  void scale_add(float* y, float a, float b, const float* x, size_t count) override {
    ctx_.record(IC_CUDA_CHECK(launch_scale_add(y, a, b, x, n(count), ctx_.stream)));
  }
  void scale_add_square(float* y, float a, float b, const float* x, size_t count) override {
    ctx_.record(IC_CUDA_CHECK(launch_scale_add_square(y, a, b, x, n(count), ctx_.stream)));
  }
  void scale_add_over_root(float* y, float a, float b, const float* x, const float* z,
                           const RootDenominator& d, size_t count) override {
    ctx_.record(IC_CUDA_CHECK(launch_scale_add_over_root(y, a, b, x, z, d.inner_epsilon, d.divisor,
                                                         d.outer_epsilon, n(count), ctx_.stream)));
  }
  // The (offset, count) pairs go up, one block per range sums its squares, the sums come
  // down; both live in one device buffer that grows when a call has more ranges.
  void sum_squares_per_range(const float* x, std::span<const FlatRange> ranges,
                             double* host_sums) override {
    if (ranges.empty()) return;
    const size_t pair_bytes = ranges.size() * 2 * sizeof(int64_t);
    const size_t bytes = pair_bytes + ranges.size() * sizeof(double);
    if (range_scratch_.bytes() < bytes) {
      Result<DeviceBuffer> grown = allocate(bytes);
      if (!grown.ok()) {
        ctx_.record(grown.status());
        std::fill(host_sums, host_sums + ranges.size(), 0.0);
        return;
      }
      range_scratch_ = std::move(grown).value();
    }
    range_pairs_.resize(2 * ranges.size());
    for (size_t r = 0; r < ranges.size(); ++r) {
      range_pairs_[2 * r] = n(ranges[r].offset);
      range_pairs_[2 * r + 1] = n(ranges[r].count);
    }
    auto* pairs = range_scratch_.as<int64_t>();
    auto* sums = reinterpret_cast<double*>(range_scratch_.as<char>() + pair_bytes);
    upload(pairs, range_pairs_.data(), pair_bytes);
    ctx_.record(
        IC_CUDA_CHECK(launch_sum_squares_per_range(x, pairs, n(ranges.size()), sums, ctx_.stream)));
    download(host_sums, sums, ranges.size() * sizeof(double));
  }
  void ema_update(float* shadow, const float* value, size_t count, float decay) override {
    ctx_.record(IC_CUDA_CHECK(launch_ema(shadow, value, n(count), decay, ctx_.stream)));
  }

  Status status() override {
    // A failed kernel can leave an error that no later call of ours returned yet.
    ctx_.record(IC_CUDA_CHECK(cudaPeekAtLastError()));
    return ctx_.first_error;
  }

  bool supports_capture() const override { return true; }
  Status begin_capture() override {
    if (ctx_.capturing) return error(description_, ": begin_capture() while capturing");
    IC_RETURN_IF_ERROR(use_device());
    IC_RETURN_IF_ERROR(
        IC_CUDA_CHECK(cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeThreadLocal)));
    ctx_.capturing = true;
    before_capture_ = ctx_.first_error;
    return Status();
  }
  Status end_capture() override {
    if (!ctx_.capturing) return error(description_, ": end_capture() without begin_capture()");
    ctx_.capturing = false;
    cudaGraph_t raw = nullptr;
    const Status ended = IC_CUDA_CHECK(cudaStreamEndCapture(ctx_.stream, &raw));
    std::unique_ptr<CUgraph_st, GraphDeleter> graph(raw);
    // A call that failed while recording (one that synchronises, say) makes the recording
    // unusable: refuse it. Nothing ran, so the backend's own error state is as before.
    Status result = ctx_.first_error.ok() ? ended : ctx_.first_error;
    if (result.ok()) {
      cudaGraphExec_t exec = nullptr;
      result = IC_CUDA_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
      if (result.ok()) exec_.reset(exec);
    }
    if (!result.ok()) {
      ctx_.first_error = before_capture_;
      (void)cudaGetLastError();  // clear the capture's error so later calls start clean
    }
    return result.with_context(description_ + ": capturing a step");
  }
  Status replay(const StepContext& ctx) override {
    if (!exec_) return error(description_, ": replay() before a capture");
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(launch_set_u64(ctx_.seed_cell, ctx.seed, ctx_.stream)));
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudaGraphLaunch(exec_.get(), ctx_.stream)));
    return Status();
  }

 private:
  CudaBackend() = default;

  static int64_t n(size_t count) { return static_cast<int64_t>(count); }
  Status use_device() { return IC_CUDA_CHECK(cudaSetDevice(ctx_.device)); }

  Status init(const BackendOptions& options) {
    ctx_.device = options.device_index;
    ctx_.allow_tf32 = options.allow_tf32;
    IC_RETURN_IF_ERROR(use_device());
    cudaStream_t stream = nullptr;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
    stream_.reset(stream);
    ctx_.stream = stream;
    cudnnHandle_t cudnn = nullptr;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnCreate(&cudnn)));
    cudnn_.reset(cudnn);
    ctx_.cudnn = cudnn;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnSetStream(cudnn, stream)));
    cublasHandle_t cublas = nullptr;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cublasCreate(&cublas)));
    cublas_.reset(cublas);
    ctx_.cublas = cublas;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cublasSetStream(cublas, stream)));
    IC_ASSIGN_OR_RETURN(cublas_workspace_, device_alloc(kCublasWorkspaceBytes));
    IC_RETURN_IF_ERROR(
        IC_CUDA_CHECK(cublasSetWorkspace(cublas, cublas_workspace_.data(), kCublasWorkspaceBytes)));
    IC_ASSIGN_OR_RETURN(seed_cell_, device_alloc(sizeof(uint64_t)));
    ctx_.seed_cell = seed_cell_.as<uint64_t>();
    IC_ASSIGN_OR_RETURN(partials_, device_alloc(kSumSquaresBlocks * sizeof(double)));

    cudaDeviceProp prop{};
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudaGetDeviceProperties(&prop, ctx_.device)));
    const size_t cudnn_version = cudnnGetVersion();
    int cublas_version = 0;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cublasGetVersion(cublas, &cublas_version)));
    description_ = "cuda:" + std::to_string(ctx_.device) + ": " + prop.name + ", sm_" +
                   std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                   std::to_string(prop.totalGlobalMem >> 30) + " GiB, cuDNN " +
                   std::to_string(cudnn_version / 10000) + "." +
                   std::to_string(cudnn_version / 100 % 100) + "." +
                   std::to_string(cudnn_version % 100) + ", cuBLAS " +
                   std::to_string(cublas_version) + (ctx_.allow_tf32 ? ", tf32 on" : ", tf32 off");
    return Status();
  }

  // Members die in reverse order: the captured graph and the buffers before the library
  // handles, the stream last.
  std::unique_ptr<CUstream_st, StreamDeleter> stream_;
  std::unique_ptr<cudnnContext, CudnnDeleter> cudnn_;
  std::unique_ptr<cublasContext, CublasDeleter> cublas_;
  DeviceBuffer cublas_workspace_, seed_cell_, partials_;
  DeviceBuffer range_scratch_;        // sum_squares_per_range: the pairs, then the sums
  std::vector<int64_t> range_pairs_;  // their host copy
  std::unique_ptr<CUgraphExec_st, GraphExecDeleter> exec_;
  CudaContext ctx_;
  Status before_capture_;  // ctx_.first_error when the capture began
  std::string description_;
};

struct Compiler {
  CudaContext& ctx;
  Result<std::unique_ptr<OpKernel>> operator()(const Conv2dDesc& d) {
    if (d.int8) return int8_refused();
    return make_conv2d(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const BatchNormDesc& d) {
    return make_batch_norm(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ReluDesc& d) { return make_relu(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const Pool2dDesc& d) { return make_pool2d(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const GlobalAvgPoolDesc& d) {
    return make_global_avg_pool(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ConcatDesc& d) { return make_concat(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const DropoutDesc& d) {
    return make_dropout(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const DenseDesc& d) {
    if (d.int8) return int8_refused();
    return make_dense(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const AddDesc& d) { return make_add(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const SoftmaxCrossEntropyDesc& d) {
    return make_softmax_cross_entropy(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ReshapeDesc& d) {
    return make_reshape(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ActivationDesc& d) {
    return make_activation(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ChannelScaleDesc& d) {
    return make_channel_scale(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const PadDesc& d) { return make_pad(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const QuantizeDesc&) { return int8_refused(); }
  Result<std::unique_ptr<OpKernel>> operator()(const CastDesc&) {
    return bf16_activations_refused();
  }
  // Backend::supports_bf16_activations is false here: graphs for CUDA keep f32 activations.
  static Result<std::unique_ptr<OpKernel>> bf16_activations_refused() {
    return invalid_argument("bf16 activations between ops run on the CPU backend only");
  }
  static Result<std::unique_ptr<OpKernel>> int8_refused() {
    return invalid_argument(
        "int8 inference runs on the CPU backend only (--precision=int8 needs --device=cpu)");
  }
};

Result<std::unique_ptr<OpKernel>> CudaBackend::compile(const OpDesc& desc) {
  if (ctx_.capturing) return error(description_, ": compile() while capturing a step");
  IC_RETURN_IF_ERROR(use_device());
  auto kernel = activation_type(desc) == DType::bf16 ? Compiler::bf16_activations_refused()
                                                     : std::visit(Compiler{ctx_}, desc);
  if (!kernel.ok()) return kernel.status().with_context(std::string("cuda: ") + op_name(desc));
  return kernel;
}

}  // namespace
}  // namespace ic::cuda

namespace ic {
namespace {

std::string cuda_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// Why there is no usable GPU, in the user's words. On a machine without an NVIDIA driver the
// runtime's own message is "CUDA driver version is insufficient", which sends people to update
// a driver they do not have.
std::string no_gpu_reason(cudaError_t probe) {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (driver == 0) return "no GPU: this machine has no NVIDIA driver (libcuda.so.1 not found)";
  if (probe == cudaSuccess || probe == cudaErrorNoDevice)
    return "no GPU: the NVIDIA driver (CUDA " + cuda_version(driver) + ") sees no CUDA device";
  if (probe == cudaErrorInsufficientDriver) {
    return "no usable GPU: the NVIDIA driver supports CUDA " + cuda_version(driver) +
           " but this build needs CUDA " + cuda_version(runtime) + " (update the driver)";
  }
  return std::string("no usable GPU (cudaGetDeviceCount: ") + cudaGetErrorString(probe) + ")";
}

}  // namespace

Result<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions& options) {
  int count = 0;
  const cudaError_t probe = cudaGetDeviceCount(&count);
  if (probe != cudaSuccess || count == 0) return error(no_gpu_reason(probe));
  if (options.device_index < 0 || options.device_index >= count)
    return error("cuda:", options.device_index, " does not exist: this machine has ", count,
                 " CUDA device", count == 1 ? "" : "s", " (cuda:0..cuda:", count - 1, ")");
  auto backend = cuda::CudaBackend::create(options);
  if (!backend.ok())
    return backend.status().with_context("cuda:" + std::to_string(options.device_index));
  return backend;
}

}  // namespace ic
