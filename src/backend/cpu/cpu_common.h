// Shared pieces of the oneDNN backend: the engine and stream every kernel runs on, memory
// descriptor helpers for the arena's layouts, and the kernel factories (one per op family).
//
// What each kernel's backward reads besides its output gradients, params and saved memory
// (each kernel reports it through OpKernel::backward_reads()):
//   conv2d, dense:          inputs[0] (x) and params (weights)
//   batch_norm:             inputs[0] (x), params, saved (batch mean/variance, ReLU mask)
//   relu, add+relu:         outputs[0] (y)
//   relu6, sigmoid, swish:  inputs[0] (x)
//   scale_channels:         inputs (x, s)
//   max_pool:               saved (oneDNN's argmax workspace)
//   softmax_cross_entropy:  inputs (logits, labels)
//   avg_pool, global_avg_pool, concat, dropout, reshape, add, zero_pad: nothing
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/vector_loops.h"

namespace ic::cpu {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// How one convolution runs: oneDNN's algorithm, the activation layout asked for (nhwc, or
// any: oneDNN's choice, converted inside the kernel) and the type x and w are computed in; or,
// one of our own matrix-product kernels on NHWC in float32 (alg and activations unused).
enum class ConvKernelKind {
  onednn,              // oneDNN's convolution primitives
  im2col,              // im2col_conv.h's product
  winograd,            // winograd_conv.h's F(2x2,3x3)
  winograd_toom_cook,  // winograd_toom_cook_conv.h's F(2,7), F(4,3) and F(4x4,3x3)
};
struct ConvPlan {
  dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
  dt compute = dt::f32;
  tag activations = tag::nhwc;
  ConvKernelKind kernel = ConvKernelKind::onednn;
  bool ours() const { return kernel != ConvKernelKind::onednn; }
};

// A 64-byte aligned buffer owned by a kernel (reordered weights and the like).
struct AlignedFree {
  void operator()(void* p) const;
};
using AlignedBuffer = std::unique_ptr<void, AlignedFree>;
AlignedBuffer aligned_buffer(size_t bytes);

// Constant convolution weights (Conv2dDesc::constant_weights) converted from the arena slice
// at `source` into a primitive's `format`, or into the layout `packing` names for our own loops
// (format then unused), once; shared by the kernels of every graph that reads the same slice
// in the same layout (an inference graph per batch size).
struct ConvertedWeights {
  const void* source = nullptr;
  dnnl::memory::desc format;
  const char* packing = "";  // "": format is a oneDNN format
  AlignedBuffer data;
  bool ready = false;  // converted (at the first forward of any of its kernels)
};

// Whether oneDNN runs its AVX-512 kernels here (its effective ISA: ONEDNN_MAX_CPU_ISA can lower
// it). Without them, some of its kernels lose to other ways (conv_kernel.cc's prefers_blocked,
// pool_loops.h).
bool onednn_runs_avx512();

// Whether oneDNN builds bf16 convolutions on this CPU (it needs AVX-512).
bool has_bf16_convolutions(const dnnl::engine& engine);
// Whether this CPU multiplies and adds bf16 faster than f32: with AMX, several times; with
// AVX512_BF16 alone, no (one 32-pair VDPBF16PS a cycle against two 16-wide f32 FMAs), and
// oneDNN's bf16 convolutions then lose to its f32 ones, which also have Winograd.
// IC_BF16_TRAINING_CONVS=bf16 or =f32 overrides it, for tests and measurements.
bool bf16_outpaces_f32();

// One CPU engine and one in-order stream for the whole backend, and the converted constant
// weights its kernels share (conv_kernel.cc; the timed convolution plans are shared by every
// backend of the process, there).
struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // Without it, convolutions asked to compute in bf16 compute in float32.
  bool native_bf16 = has_bf16_convolutions(engine);
  // Whether training convolutions asked for bf16 compute in bf16 (conv_kernel.cc says when).
  bool bf16_training_convolutions = native_bf16 && bf16_outpaces_f32();
  std::vector<std::weak_ptr<ConvertedWeights>> converted_weights;
};

// The converted copy of the constant weights at `source` in `format` or `packing`: the one
// another kernel of this backend already made, else a new one of `bytes`, which other kernels
// find unless `share` is false (timing runs bind scratch buffers that go away).
std::shared_ptr<ConvertedWeights> converted_weights(DnnlContext& ctx, const void* source,
                                                    const dnnl::memory::desc& format,
                                                    const char* packing, size_t bytes, bool share);

// NHWC activation [N,H,W,C] as oneDNN sees it (logical NCHW dims, physical nhwc).
inline dnnl::memory::desc nhwc_md(const Shape& s, dt type = dt::f32) {
  return dnnl::memory::desc({s.n(), s.c(), s.h(), s.w()}, type, tag::nhwc);
}

// The oneDNN type of an arena's activations (ops.h's `activations`: f32, bf16, or u8 for the
// int8 inference ops that take it).
inline dt activation_dt(DType type) {
  return type == DType::bf16 ? dt::bf16 : type == DType::u8 ? dt::u8 : dt::f32;
}

// One activation element as the arena holds it, for the kernels that are plain loops: float, or
// bfloat16's bits. Loops read with widen() and compute in float; narrow() rounds to nearest even.
struct Bf16 {
  uint16_t bits;
};
inline float widen(float v) { return v; }
inline float widen(Bf16 v) { return bf16_to_float(v.bits); }
template <typename T>
T narrow(float v);
template <>
inline float narrow<float>(float v) {
  return v;
}
template <>
inline Bf16 narrow<Bf16>(float v) {
  return Bf16{float_to_bf16(v)};
}

// dx = dy where lo < v <= hi, else 0, over [0, count) (vector_loops.h; one thread's share).
inline void masked_grad(const float* v, const float* dy, float* dx, int64_t count, float lo,
                        float hi) {
  masked_grad_f32(v, dy, dx, count, lo, hi);
}
inline void masked_grad(const Bf16* v, const float* dy, float* dx, int64_t count, float lo,
                        float hi) {
  static_assert(sizeof(Bf16) == sizeof(uint16_t));
  masked_grad_bf16(reinterpret_cast<const uint16_t*>(v), dy, dx, count, lo, hi);
}
// sum[i] += x[r * stride + i] over rows r in order (vector_loops.h).
inline void sum_rows(const float* x, int64_t rows, int64_t stride, float* sum, int64_t count) {
  sum_rows_f32(x, rows, stride, sum, count);
}
inline void sum_rows(const Bf16* x, int64_t rows, int64_t stride, float* sum, int64_t count) {
  sum_rows_bf16(reinterpret_cast<const uint16_t*>(x), rows, stride, sum, count);
}
// y[i] = x[i] * s[i], rounded once in bf16 (vector_loops.h).
inline void multiply(const float* x, const float* s, float* y, int64_t count) {
  multiply_f32(x, s, y, count);
}
inline void multiply(const Bf16* x, const Bf16* s, Bf16* y, int64_t count) {
  multiply_bf16(reinterpret_cast<const uint16_t*>(x), reinterpret_cast<const uint16_t*>(s),
                reinterpret_cast<uint16_t*>(y), count);
}

// y[i] = max(a[i] + b[i], floor) (a NaN stays NaN), rounded once in bf16 (vector_loops.h).
inline void add(const float* a, const float* b, float* y, int64_t count, float floor) {
  for (int64_t i = 0; i < count; ++i) y[i] = std::max(a[i] + b[i], floor);
}
inline void add(const Bf16* a, const Bf16* b, Bf16* y, int64_t count, float floor) {
  add_bf16(reinterpret_cast<const uint16_t*>(a), reinterpret_cast<const uint16_t*>(b),
           reinterpret_cast<uint16_t*>(y), count, floor);
}

// Kernel<float> or Kernel<Bf16>, as `type` says; other types are refused naming `op`.
template <template <typename> class Kernel, typename Desc>
Result<std::unique_ptr<OpKernel>> make_for_activations(const char* op, DType type, const Desc& d) {
  if (type == DType::f32) return std::unique_ptr<OpKernel>(std::make_unique<Kernel<float>>(d));
  if (type == DType::bf16) return std::unique_ptr<OpKernel>(std::make_unique<Kernel<Bf16>>(d));
  return error(op, ": activations in ", dtype_name(type), " (f32 or bf16 only)");
}

// Bytes rounded up so consecutive sub-buffers stay 64-byte aligned.
inline size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// Wraps `ptr` (may be null: bound later with set_data_handle) in a oneDNN memory object.
inline dnnl::memory wrap(const dnnl::memory::desc& md, const DnnlContext& ctx, const void* ptr) {
  return dnnl::memory(md, ctx.engine, const_cast<void*>(ptr));
}

// One primitive with its arguments, built at bind time so forward/backward only execute
// (building the argument map per call would allocate).
struct DnnlStep {
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
};
inline void run_steps(std::vector<DnnlStep>& steps, dnnl::stream& stream) {
  for (DnnlStep& step : steps) step.primitive.execute(stream, step.args);
}
inline DnnlStep reorder_step(const dnnl::memory& from, const dnnl::memory& to) {
  return {dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}};
}

// A kernel's constant weights (Conv2dDesc::constant_weights) in its primitives' formats: each
// the backend's shared copy (converted_weights), converted at the first forward that finds it
// not yet converted.
class WeightConversions {
 public:
  void clear() { conversions_.clear(); }
  // `natural` (the arena's slice) in `format`: the memory a primitive reads.
  dnnl::memory add(DnnlContext& ctx, const dnnl::memory& natural, const dnnl::memory::desc& format,
                   bool share) {
    auto target =
        converted_weights(ctx, natural.get_data_handle(), format, "", format.get_size(), share);
    const dnnl::memory packed(format, ctx.engine, target->data.get());
    conversions_.push_back({std::move(target), reorder_step(natural, packed)});
    return packed;
  }
  // Converts those not converted yet.
  void run(dnnl::stream& stream) {
    for (Conversion& conversion : conversions_) {
      if (conversion.target->ready) continue;
      conversion.step.primitive.execute(stream, conversion.step.args);
      conversion.target->ready = true;
    }
  }

 private:
  struct Conversion {
    std::shared_ptr<ConvertedWeights> target;
    DnnlStep step;
  };
  std::vector<Conversion> conversions_;
};

// The memory a primitive reads (`into_copy`) or writes in the layout and type `want`: `arena`
// itself when it has them, else a copy in `region` (want.get_size() bytes), with the reorder
// that fills the copy (before the primitive) or empties it into the arena (after) appended to
// `steps`.
inline dnnl::memory through_copy(const dnnl::memory& arena, const dnnl::memory::desc& want,
                                 void* region, std::vector<DnnlStep>& steps, bool into_copy) {
  if (want == arena.get_desc()) return arena;
  dnnl::memory copy(want, arena.get_engine(), region);
  steps.push_back(into_copy ? reorder_step(arena, copy) : reorder_step(copy, arena));
  return copy;
}

// Runs `body(i)` for i in [0, count), split over OpenMP threads when the work is large.
template <typename Body>
void parallel_for(int64_t count, int64_t min_per_thread, Body body) {
  if (count < 2 * min_per_thread) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) body(i);
}

constexpr int64_t kChunk = 1 << 14;  // elements per parallel task in flat loops

// Runs body(begin, end) over [0, count) in chunks of kChunk elements.
template <typename Body>
void chunked(int64_t count, Body body) {
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  parallel_for(chunks, 1, [&](int64_t c) {
    const int64_t begin = c * kChunk;
    body(begin, std::min(count, begin + kChunk));
  });
}

// Kernel factories. Each returns an error for shapes it cannot handle.
Result<std::unique_ptr<OpKernel>> make_conv2d(const Conv2dDesc& d, DnnlContext& ctx);
// The type make_conv2d's kernel for `d` computes in (Backend::conv_compute_type): timed where
// the kernel would be.
Result<DType> conv_compute_type(const Conv2dDesc& d, DnnlContext& ctx);
// Whether make_conv2d's int8 kernel for `d` (d.int8 set) times no slower than the float32
// convolution it replaces (Backend::int8_conv_pays): timed where the kernel would be.
Result<bool> int8_conv_pays(const Conv2dDesc& d, DnnlContext& ctx);
Result<std::unique_ptr<OpKernel>> make_batch_norm(const BatchNormDesc& d, DnnlContext& ctx);
Result<std::unique_ptr<OpKernel>> make_pool2d(const Pool2dDesc& d, DnnlContext& ctx);
Result<std::unique_ptr<OpKernel>> make_dense(const DenseDesc& d, DnnlContext& ctx);
Result<std::unique_ptr<OpKernel>> make_relu(const ReluDesc& d);
Result<std::unique_ptr<OpKernel>> make_add(const AddDesc& d);
Result<std::unique_ptr<OpKernel>> make_global_avg_pool(const GlobalAvgPoolDesc& d);
Result<std::unique_ptr<OpKernel>> make_concat(const ConcatDesc& d);
Result<std::unique_ptr<OpKernel>> make_dropout(const DropoutDesc& d);
Result<std::unique_ptr<OpKernel>> make_softmax_cross_entropy(const SoftmaxCrossEntropyDesc& d);
Result<std::unique_ptr<OpKernel>> make_reshape(const ReshapeDesc& d);
Result<std::unique_ptr<OpKernel>> make_quantize(const QuantizeDesc& d);
Result<std::unique_ptr<OpKernel>> make_cast(const CastDesc& d, DnnlContext& ctx);
Result<std::unique_ptr<OpKernel>> make_activation(const ActivationDesc& d, DnnlContext& ctx);
Result<std::unique_ptr<OpKernel>> make_channel_scale(const ChannelScaleDesc& d);
Result<std::unique_ptr<OpKernel>> make_pad(const PadDesc& d);
// The weights' oneDNN description: {Co, Ci, kh, kw}, or grouped {G, Co/G, Ci/G, kh, kw}.
dnnl::memory::desc conv_weights_md(const Conv2dDesc& d, dt type, tag format);
// oneDNN's eltwise algorithm, alpha and beta for an Activation: the activation kernel and a
// convolution's fused_activation post-op compute the same function.
struct EltwiseAlgorithm {
  dnnl::algorithm alg;
  float alpha, beta;
};
EltwiseAlgorithm eltwise_algorithm(Activation function);
// Appends a convolution's fused ReLU or fused activation (Conv2dDesc; at most one, see
// check_conv_post_ops) to `post` as an eltwise post-op; nothing when it has neither.
void append_fused_activation(dnnl::post_ops& post, bool relu, std::optional<Activation> activation);
// Whether make_conv2d builds `d`, a pointwise convolution with a fused depthwise one
// (Backend::fuses_depthwise).
bool fuses_depthwise(const Conv2dDesc& d, DnnlContext& ctx);
// Depthwise convolutions of an inference graph on bf16 activations (depthwise_bf16_kernel.cc):
// whether `d` is one, and its kernel, which make_conv2d uses in place of oneDNN's where the CPU
// has bf16 convolutions.
bool depthwise_bf16_applies(const Conv2dDesc& d);
// share_weights: false for a kernel timed on scratch buffers (converted_weights).
std::unique_ptr<OpKernel> make_depthwise_bf16(const Conv2dDesc& d, DnnlContext& ctx,
                                              bool share_weights = true);
// int8 layers (ops.h's Int8Conv; int8_kernels.cc): make_conv2d / make_dense call these when the
// desc's `int8` is set, after checking the shapes.
Result<std::unique_ptr<OpKernel>> make_int8_conv2d(const Conv2dDesc& d, DnnlContext& ctx);
Result<std::unique_ptr<OpKernel>> make_int8_dense(const DenseDesc& d, DnnlContext& ctx);

}  // namespace ic::cpu
