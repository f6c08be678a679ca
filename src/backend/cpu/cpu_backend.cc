// The CPU Backend: 64-byte aligned host memory, flat arena arithmetic in OpenMP loops,
// and oneDNN-backed kernels compiled per op (see cpu_common.h for the kernel factories).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "core/host_memory.h"

namespace ic::cpu {

void AlignedFree::operator()(void* p) const { std::free(p); }

AlignedBuffer aligned_buffer(size_t bytes) {
  return AlignedBuffer(bytes == 0 ? nullptr : std::aligned_alloc(64, align64(bytes)));
}

std::shared_ptr<ConvertedWeights> converted_weights(DnnlContext& ctx, const void* source,
                                                    const dnnl::memory::desc& format,
                                                    const char* packing, size_t bytes, bool share) {
  auto& shared = ctx.converted_weights;
  std::erase_if(shared, [](const auto& entry) { return entry.expired(); });
  if (share) {
    for (const auto& entry : shared) {
      std::shared_ptr<ConvertedWeights> known = entry.lock();
      if (known && known->source == source && known->format == format &&
          std::strcmp(known->packing, packing) == 0) {
        return known;
      }
    }
  }
  auto made = std::make_shared<ConvertedWeights>();
  made->source = source;
  made->format = format;
  made->packing = packing;
  made->data = aligned_buffer(bytes);
  if (share) shared.push_back(made);
  return made;
}

namespace {

// Runs body(begin, end) over [0, count) in one contiguous chunk per thread, so the inner
// loop stays a plain vectorisable loop. Small ranges run on the calling thread.
template <typename Body>
void flat_for(size_t count, Body body) {
  constexpr size_t kSerialBelow = size_t{1} << 15;
  if (count < kSerialBelow || omp_get_max_threads() == 1) {
    body(size_t{0}, count);
    return;
  }
#pragma omp parallel
  {
    const size_t threads = static_cast<size_t>(omp_get_num_threads());
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    const size_t chunk = (count + threads - 1) / threads;
    const size_t begin = std::min(count, t * chunk);
    const size_t end = std::min(count, begin + chunk);
    if (begin < end) body(begin, end);
  }
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads), partial_sums_(size_t(threads)) {}

  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string description() const override {
    const dnnl_version_t* v = dnnl_version();
    return "cpu: oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch) + ", " + std::to_string(threads_) + " threads" +
           (!dnnl_.native_bf16 ? " (no bf16 convolutions on this CPU: bf16 computes in float32)"
            : dnnl_.bf16_training_convolutions
                ? ""
                : " (no AMX: bf16 training computes its convolutions in float32)");
  }

  bool has_native_bf16() const override { return dnnl_.native_bf16; }
  // oneDNN's pooling and batch norm take bf16 only where it has bf16 convolutions (AVX-512); on
  // an AVX2 CPU those kernels refuse bf16 activations, and bf16 computes in float32 anyway.
  bool supports_bf16_activations() const override { return dnnl_.native_bf16; }
  Result<DType> conv_compute_type(const Conv2dDesc& d) override {
    try {
      return cpu::conv_compute_type(d, dnnl_);
    } catch (const dnnl::error& e) {
      return error("cpu: oneDNN cannot build conv2d: ", e.what());
    }
  }

  Result<bool> int8_conv_pays(const Conv2dDesc& d) override {
    try {
      return cpu::int8_conv_pays(d, dnnl_);
    } catch (const dnnl::error& e) {
      return error("cpu: oneDNN cannot build conv2d: ", e.what());
    }
  }

  bool fuses_depthwise(const Conv2dDesc& d) override {
    try {
      return cpu::fuses_depthwise(d, dnnl_);
    } catch (const dnnl::error&) {
      return false;
    }
  }

  Result<DeviceBuffer> allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, align64(std::max<size_t>(bytes, 1)));
    if (!p) return error("cpu: cannot allocate ", bytes, " bytes");
    return DeviceBuffer(p, bytes, [](void* q) { std::free(q); });
  }
  std::optional<size_t> available_memory() const override { return available_host_memory(); }
  void upload(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (dst == src || bytes == 0) return;
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    flat_for(bytes / 4,
             [&](size_t b, size_t e) { std::memmove(d + 4 * b, s + 4 * b, 4 * (e - b)); });
    const size_t tail = bytes % 4;
    if (tail) std::memmove(d + bytes - tail, s + bytes - tail, tail);
  }
  void fill(float* dst, float value, size_t count) override {
    flat_for(count, [&](size_t b, size_t e) { std::fill(dst + b, dst + e, value); });
  }
  void synchronize() override {}

  Result<std::unique_ptr<OpKernel>> compile(const OpDesc& desc) override;

  void add_inplace(float* y, const float* x, size_t count) override {
    flat_for(count, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) y[i] += x[i];
    });
  }
  void axpy(float a, const float* x, float* y, size_t count) override {
    flat_for(count, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) y[i] += a * x[i];
    });
  }
  void sum_squares(const float* x, size_t count, float* result) override {
    *result = static_cast<float>(sum_squares_double(x, count));
  }
  void scale_add(float* y, float a, float b, const float* x, size_t count) override {
    flat_for(count, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) y[i] = a * y[i] + b * x[i];
    });
  }
  void scale_add_square(float* y, float a, float b, const float* x, size_t count) override {
    flat_for(count, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) y[i] = a * y[i] + b * x[i] * x[i];
    });
  }
  void scale_add_over_root(float* y, float a, float b, const float* x, const float* z,
                           const RootDenominator& d, size_t count) override {
    flat_for(count, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        y[i] =
            a * y[i] + b * x[i] / (std::sqrt(z[i] + d.inner_epsilon) / d.divisor + d.outer_epsilon);
      }
    });
  }
  void sum_squares_per_range(const float* x, std::span<const FlatRange> ranges,
                             double* host_sums) override {
    for (size_t r = 0; r < ranges.size(); ++r) {
      host_sums[r] = sum_squares_double(x + ranges[r].offset, ranges[r].count);
    }
  }
  void ema_update(float* shadow, const float* value, size_t count, float decay) override {
    const float rate = 1.f - decay;
    flat_for(count, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) shadow[i] -= rate * (shadow[i] - value[i]);
    });
  }

 private:
  // Accumulates in double per thread, then adds the per-thread sums in thread order (the
  // same result every call for a given thread count).
  double sum_squares_double(const float* x, size_t count) {
    std::vector<double>& partial = partial_sums_;
    if (partial.size() < size_t(omp_get_max_threads()))  // only if the thread count grew
      partial.resize(size_t(omp_get_max_threads()));
    std::fill(partial.begin(), partial.end(), 0.0);
    flat_for(count, [&](size_t b, size_t e) {
      double s = 0.0;
      for (size_t i = b; i < e; ++i) s += static_cast<double>(x[i]) * x[i];
      partial[static_cast<size_t>(omp_get_thread_num())] = s;
    });
    double total = 0.0;
    for (double s : partial) total += s;
    return total;
  }

  int threads_;
  std::vector<double> partial_sums_;  // per thread, for sum_squares
  DnnlContext dnnl_;
};

struct Compiler {
  DnnlContext& ctx;
  Result<std::unique_ptr<OpKernel>> operator()(const Conv2dDesc& d) { return make_conv2d(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const BatchNormDesc& d) {
    return make_batch_norm(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ReluDesc& d) { return make_relu(d); }
  Result<std::unique_ptr<OpKernel>> operator()(const Pool2dDesc& d) { return make_pool2d(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const GlobalAvgPoolDesc& d) {
    return make_global_avg_pool(d);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ConcatDesc& d) { return make_concat(d); }
  Result<std::unique_ptr<OpKernel>> operator()(const DropoutDesc& d) { return make_dropout(d); }
  Result<std::unique_ptr<OpKernel>> operator()(const DenseDesc& d) { return make_dense(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const AddDesc& d) { return make_add(d); }
  Result<std::unique_ptr<OpKernel>> operator()(const SoftmaxCrossEntropyDesc& d) {
    return make_softmax_cross_entropy(d);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ReshapeDesc& d) { return make_reshape(d); }
  Result<std::unique_ptr<OpKernel>> operator()(const QuantizeDesc& d) { return make_quantize(d); }
  Result<std::unique_ptr<OpKernel>> operator()(const CastDesc& d) { return make_cast(d, ctx); }
  Result<std::unique_ptr<OpKernel>> operator()(const ActivationDesc& d) {
    return make_activation(d, ctx);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const ChannelScaleDesc& d) {
    return make_channel_scale(d);
  }
  Result<std::unique_ptr<OpKernel>> operator()(const PadDesc& d) { return make_pad(d); }
};

Result<std::unique_ptr<OpKernel>> CpuBackend::compile(const OpDesc& desc) {
  try {
    auto kernel = std::visit(Compiler{dnnl_}, desc);
    if (!kernel.ok()) return kernel.status().with_context(std::string("cpu: ") + op_name(desc));
    return kernel;
  } catch (const dnnl::error& e) {
    return error("cpu: oneDNN cannot build ", op_name(desc), ": ", e.what());
  }
}

}  // namespace
}  // namespace ic::cpu

namespace ic {

Result<std::unique_ptr<Backend>> make_cpu_backend(const BackendOptions& options) {
  if (options.num_threads < 0)
    return error("cpu: num_threads must be >= 0, got ", options.num_threads);
  omp_set_num_threads(options.num_threads > 0 ? options.num_threads : omp_get_num_procs());
  const int threads = omp_get_max_threads();
  try {
    return std::unique_ptr<Backend>(std::make_unique<cpu::CpuBackend>(threads));
  } catch (const dnnl::error& e) {
    return error("cpu: cannot create the oneDNN engine: ", e.what());
  }
}

}  // namespace ic
