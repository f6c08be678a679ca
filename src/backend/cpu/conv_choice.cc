// Which plan a Conv2d runs on oneDNN, and make_conv2d, the backend's convolution factory.
//
// Which implementation (a ConvPlan: oneDNN algorithm, activation layout, compute type):
//   - training: Winograd F(4x4, 3x3) for 3x3 stride-1 convs on large maps where this CPU has
//     it (about half the multiply-adds of direct convolution), else direct: on oneDNN's blocked
//     layout for kernels wider than 1x1 on a CPU without AVX-512 (conv_kernel.cc's
//     prefers_blocked), else on NHWC;
//   - forward only (training = false): the same rule, or, when conv_timing_enabled(), each
//     plan this CPU offers (a bf16 convolution's in float32 as well, and in float32 our matrix
//     products: im2col_conv.h's, for 3x3 stride 1 winograd_conv.h's, and for 1x7, 7x1, 1x3, 3x1
//     and 3x3 stride 1 winograd_toom_cook_conv.h's) is built and timed on
//     scratch buffers (two runs, the faster one counts), once per shape per backend; later convs
//     of the same shape reuse the answer.
//
// A pointwise convolution with a fused depthwise one (Conv2dDesc::fused_depthwise) has one plan,
// and Backend::fuses_depthwise times it against the two convolutions apart. An int8 convolution
// has one kernel (int8_kernels.cc), and Backend::int8_conv_pays times it against the float32
// layer's plans.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/bf16_choice.h"
#include "backend/cpu/conv_kernel.h"
#include "backend/cpu/cpu_common.h"
#include "backend/cpu/int8_choice.h"

namespace ic::cpu {
namespace {

using dnnl::algorithm;

// What the timing depends on: everything but the pointers.
// A fused depthwise convolution's part of plan_key.
std::string fused_depthwise_key(const Conv2dDesc& d) {
  if (!d.fused_depthwise) return "";
  const FusedDepthwise& dw = *d.fused_depthwise;
  return " depthwise s" + std::to_string(dw.stride) + (dw.relu ? " relu" : "") +
         (dw.activation ? std::string(" ") + activation_name(*dw.activation) : "");
}

std::string plan_key(const Conv2dDesc& d) {
  return d.input.str() + " " + std::to_string(d.out_channels) + " g" + std::to_string(d.groups) +
         " " + std::to_string(d.kernel_h) + "x" + std::to_string(d.kernel_w) + " s" +
         std::to_string(d.stride_h) + "x" + std::to_string(d.stride_w) +
         (d.padding == Padding::same ? " same" : " valid") + (d.has_bias ? " bias" : "") +
         (d.fused_relu ? " relu" : "") +
         (d.fused_activation ? std::string(" ") + activation_name(*d.fused_activation) : "") +
         (d.constant_weights ? " const" : "") + " " + dtype_name(d.compute) + " in " +
         dtype_name(d.activations) + fused_depthwise_key(d);
}

// The layer, whatever batch it runs at: plan_key without the batch.
std::string layer_key(Conv2dDesc d) {
  d.input[0] = 0;
  return plan_key(d);
}

// Seconds of one forward of the bound `kernel`: the fastest of two runs or more. The first run
// pays for the weights' conversion and first touches; later ones are clean. Small kernels (a
// few hundred microseconds at batch 1) run more often, up to 8 times in a few milliseconds: on
// a shared machine one or two runs of them picked by chance between plans within 10% of each
// other.
double fastest_forward_seconds(OpKernel& kernel, DnnlContext& ctx) {
  const StepContext step;
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int run = 0; run < 2 || (run < 8 && total < 4e-3); ++run) {
    const auto start = std::chrono::steady_clock::now();
    kernel.forward(step);
    ctx.stream.wait();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, seconds);
    if (run > 0) total += seconds;
  }
  return best;
}

// Seconds of one forward of `kernel`, a kernel for `d`: the fastest of fastest_forward_seconds
// runs, on scratch buffers.
double time_forward(OpKernel& kernel, const Conv2dDesc& d, DnnlContext& ctx) {
  auto filled = [](size_t count, float value) {
    AlignedBuffer buffer = aligned_buffer(count * sizeof(float));
    std::fill_n(static_cast<float*>(buffer.get()), count, value);
    return buffer;
  };
  const auto weights = static_cast<size_t>(d.weight_count());
  AlignedBuffer x = filled(static_cast<size_t>(d.input.numel()), 0.5f);
  AlignedBuffer w = filled(weights, 0.01f);
  AlignedBuffer bias = filled(static_cast<size_t>(d.out_channels), 0.f);
  AlignedBuffer y = filled(static_cast<size_t>(d.output().numel()), 0.f);
  AlignedBuffer workspace = aligned_buffer(std::max<size_t>(kernel.workspace_bytes(), 64));
  OpBindings b;
  b.inputs = {x.get()};
  b.outputs = {y.get()};
  b.params = {w.get()};
  if (d.has_bias) b.params.push_back(bias.get());
  AlignedBuffer depthwise_w;  // a fused depthwise convolution's weights [3,3,1,C]
  if (d.fused_depthwise) {
    depthwise_w = filled(static_cast<size_t>(9 * d.out_channels), 0.01f);
    b.params.insert(b.params.end(), {depthwise_w.get(), bias.get()});
  }
  b.workspace = workspace.get();
  if (!kernel.bind(b).ok()) return std::numeric_limits<double>::infinity();
  return fastest_forward_seconds(kernel, ctx);
}

// Seconds of the Cast op that converts `shape`'s values from `from` to `to` (f32 <-> bf16), on
// scratch buffers: what the precision pass adds at each edge of a float32 region.
double time_cast(const Shape& shape, DType from, DType to, DnnlContext& ctx) {
  Result<std::unique_ptr<OpKernel>> cast = make_cast(CastDesc{shape, from, to}, ctx);
  if (!cast.ok()) return 0;
  const size_t bytes = static_cast<size_t>(shape.numel()) * sizeof(float);
  AlignedBuffer x = aligned_buffer(bytes), y = aligned_buffer(bytes);
  std::memset(x.get(), 0, bytes);
  OpBindings b;
  b.inputs = {x.get()};
  b.outputs = {y.get()};
  if (!(*cast)->bind(b).ok()) return 0;
  return fastest_forward_seconds(**cast, ctx);
}

using Kernel = ConvKernelKind;

// Every plan worth trying for `d` in the compute types `types`; oneDNN refuses those it has no
// implementation of. settled set: only plans of that kind.
std::vector<ConvPlan> candidate_plans(const Conv2dDesc& d, const std::vector<dt>& types,
                                      std::optional<Kernel> settled) {
  const auto allowed = [&](Kernel kind) { return !settled || *settled == kind; };
  std::vector<ConvPlan> plans;
  for (const dt ct : types) {
    if (ct == dt::f32)
      for (const ProductKernel& ours : product_kernels())
        if (ours.takes(d) && allowed(ours.kind))
          plans.push_back({algorithm::convolution_direct, ct, tag::nhwc, ours.kind});
    if (!allowed(Kernel::onednn)) continue;
    plans.push_back({algorithm::convolution_direct, ct, tag::nhwc});
    plans.push_back({algorithm::convolution_direct, ct, tag::any});
    plans.push_back({algorithm::convolution_auto, ct, tag::any});
    if (ct == dt::f32 && d.groups == 1 && d.kernel_h == 3 && d.kernel_w == 3 && d.stride_h == 1 &&
        d.stride_w == 1)
      plans.push_back({algorithm::convolution_winograd, ct, tag::any});
  }
  // The products last: they must beat the best convolution by kProductMargin.
  std::stable_partition(plans.begin(), plans.end(), [](const ConvPlan& p) { return !p.ours(); });
  return plans;
}

// The plans timed so far, shared by every CPU backend of the process: two graphs of one shape
// (two loaded versions of a model, a server and classify in one process) then run the same
// implementation and give the same answers bit for bit. Timing holds the lock: compiles that
// race time one after the other rather than against each other.
struct PlanCache {
  std::mutex mutex;
  std::map<std::string, ConvPlan> plans;
  std::map<std::string, bool> fused_faster;  // by plan_key of the fused desc
  std::map<std::string, dt> compute;         // by layer_key
  // By layer_key: which kind of kernel the layer runs (oneDNN's, or one of our products),
  // settled at the first batch size timed like its compute type. Each kind sums in its own
  // order, so a layer that took one at one batch size and another at another would give an
  // image other roundings in a batch run as slices (InferenceRunner) than alone.
  std::map<std::string, Kernel> kernel;
  // By layer_key of the float32 layer: whether its int8 kernel times no slower, settled at the
  // first batch size timed for the same reason as its compute type.
  std::map<std::string, bool> int8_pays;
};

// The compute types to time for `d`. A bf16 convolution is also tried in float32 on its
// widened activations: without AMX, one bf16 dot product a cycle does no more than two f32
// FMAs, and depthwise convolutions do not use it at all, so layer by layer either may win
// (EfficientNet-B0 at batch 1 on a 2-core Xeon with AVX512_BF16: every kind of convolution took
// 1.3-1.7x longer in bf16 than in f32). The first batch size timed settles the type for the
// layer's other batch sizes, so that an image gets the same answer whatever batch it is in
// (a server's graphs of 1, 8, 32 ...); only the algorithm and layout are timed again.
std::vector<dt> compute_types(const Conv2dDesc& d, const DnnlContext& ctx, const PlanCache& cache,
                              const std::string& layer) {
  const dt asked = compute_type(d, ctx);
  if (asked != dt::bf16) return {asked};
  if (auto settled = cache.compute.find(layer); settled != cache.compute.end())
    return {settled->second};
  return {dt::bf16, dt::f32};
}

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

// How much faster than the best oneDNN convolution im2col_conv.h's product must time to be taken.
constexpr double kProductMargin = 1.15;

struct TimedPlan {
  ConvPlan plan;
  double seconds = 0;
};

// The fastest of `d`'s plans in the compute types `types`, timed now (the cache's lock held).
Result<TimedPlan> fastest_plan(const Conv2dDesc& d, DnnlContext& ctx, const std::vector<dt>& types,
                               std::optional<Kernel> settled) {
  std::vector<std::unique_ptr<OpKernel>> timed;
  TimedPlan best{{}, std::numeric_limits<double>::infinity()};
  for (const ConvPlan& plan : candidate_plans(d, types, settled)) {
    std::unique_ptr<OpKernel> kernel;
    try {
      kernel = plan_kernel(d, ctx, plan, /*share_weights=*/false);
    } catch (const dnnl::error&) {
      continue;  // not on this CPU
    }
    const bool duplicate = std::any_of(timed.begin(), timed.end(), [&](const auto& other) {
      return same_convolution(*kernel, *other);
    });
    if (duplicate) continue;
    const double seconds = time_forward(*kernel, d, ctx);
    // The product must win clearly: timed alone it looks better than it runs among the other
    // ops (Inception v3 at batch 1, 2-core AMD EPYC Zen 2: 1x1 and 1x7 convolutions it won by a
    // few percent here ran 1-20% slower than oneDNN's convolution in the network).
    const double charged = plan.ours() ? seconds * kProductMargin : seconds;
    if (charged < best.seconds) best = {plan, charged};
    timed.push_back(std::move(kernel));
  }
  if (timed.empty() || best.seconds == std::numeric_limits<double>::infinity())
    return error("conv2d: oneDNN has no ", dtype_name(d.compute), " implementation for input ",
                 d.input.str(), ", ", d.out_channels, " filters, kernel ", d.kernel_h, "x",
                 d.kernel_w);
  return best;
}

// Which kind of kernel `layer` runs, where an earlier batch size settled it.
std::optional<Kernel> settled_kernel(const PlanCache& cache, const std::string& layer) {
  const auto found = cache.kernel.find(layer);
  if (found == cache.kernel.end()) return std::nullopt;
  return found->second;
}

// The fastest plan for `d`, timed once per shape in the process.
Result<ConvPlan> timed_plan(const Conv2dDesc& d, DnnlContext& ctx) {
  const std::string key = plan_key(d);
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (auto known = cache.plans.find(key); known != cache.plans.end()) return known->second;
  const std::string layer = layer_key(d);
  IC_ASSIGN_OR_RETURN(
      const TimedPlan best,
      fastest_plan(d, ctx, compute_types(d, ctx, cache, layer), settled_kernel(cache, layer)));
  cache.plans.emplace(key, best.plan);
  cache.compute.emplace(layer, best.plan.compute);
  cache.kernel.emplace(layer, best.plan.kernel);
  return best.plan;
}

// The fastest float32 plan of `wide` (float32 activations), timed now and recorded as the
// layer's plan, compute type and kind of kernel: what the layer runs where float32 wins a
// comparison against bf16 or int8. The cache's lock is held.
Result<TimedPlan> fastest_float32_plan(const Conv2dDesc& wide, DnnlContext& ctx, PlanCache& cache) {
  const std::string layer = layer_key(wide);
  IC_ASSIGN_OR_RETURN(const TimedPlan best,
                      fastest_plan(wide, ctx, {dt::f32}, settled_kernel(cache, layer)));
  cache.plans.emplace(plan_key(wide), best.plan);
  cache.compute.emplace(layer, dt::f32);
  cache.kernel.emplace(layer, best.plan.kernel);
  return best;
}

// Backend::conv_compute_type for a timed bf16 convolution on bf16 activations: its fastest bf16
// plan against the fastest float32 one on float32 activations (what the graph runs if float32
// wins: no conversions on the way in and out). Settled per layer as timed_plan's choice is, at
// the first batch size asked.
Result<DType> timed_compute_type(const Conv2dDesc& d, DnnlContext& ctx) {
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const std::string layer = layer_key(d);
  if (auto settled = cache.compute.find(layer); settled != cache.compute.end())
    return settled->second == dt::bf16 ? DType::bf16 : DType::f32;
  Conv2dDesc wide = d;
  wide.compute = wide.activations = DType::f32;
  // A depthwise layer's bf16 side is depthwise_bf16_kernel.cc's loop, not a oneDNN plan.
  TimedPlan in_bf16;
  if (depthwise_bf16_applies(d)) {
    in_bf16.seconds = time_forward(*make_depthwise_bf16(d, ctx, false), d, ctx);
  } else {
    IC_ASSIGN_OR_RETURN(in_bf16, fastest_plan(d, ctx, {dt::bf16}, Kernel::onednn));
  }
  IC_ASSIGN_OR_RETURN(const TimedPlan in_f32, fastest_float32_plan(wide, ctx, cache));
  // Where bf16 multiply-adds outpace float32's (AMX), most layers stay bf16, so a layer kept
  // in float32 is most likely an island: the Casts of its input and its output are part of its
  // cost. They are timed, not assumed: on a 2-core AMX Xeon MobileNet v2's depthwise layers
  // timed faster in float32 alone, and their 32 Casts then took 35% of its bf16 inference.
  // There bf16 is also the side that stays on a tie (bf16_choice.h).
  const bool amx = bf16_outpaces_f32();
  const double casts = amx ? time_cast(d.input, DType::bf16, DType::f32, ctx) +
                                 time_cast(d.output(), DType::f32, DType::bf16, ctx)
                           : 0;
  const bool bf16 = keeps_bf16(in_bf16.seconds, in_f32.seconds, casts, amx);
  if (bf16 && !depthwise_bf16_applies(d)) cache.plans.emplace(plan_key(d), in_bf16.plan);
  cache.compute.emplace(layer, bf16 ? dt::bf16 : dt::f32);
  return bf16 ? DType::bf16 : DType::f32;
}

// Backend::int8_conv_pays for a timed int8 convolution: its kernel against the fastest
// float32 plan of the layer (charged kProductMargin where that is one of our products, as in
// fastest_plan). The Quantize nodes an int8 layer may add at its input are not charged: between
// int8 layers the convolution before writes u8 itself. Settled per layer at the first batch
// size asked; on a tie the layer stays int8, what the user asked for.
Result<bool> timed_int8_pays(const Conv2dDesc& d, DnnlContext& ctx) {
  Conv2dDesc wide = d;
  wide.int8.reset();
  const std::string layer = layer_key(wide);
  PlanCache& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (auto settled = cache.int8_pays.find(layer); settled != cache.int8_pays.end())
    return settled->second;
  IC_ASSIGN_OR_RETURN(const std::unique_ptr<OpKernel> int8, make_int8_conv2d(d, ctx));
  const double int8_seconds = time_forward(*int8, d, ctx);
  IC_ASSIGN_OR_RETURN(const TimedPlan in_f32, fastest_float32_plan(wide, ctx, cache));
  const bool pays = keeps_int8(int8_seconds, in_f32.seconds);
  cache.int8_pays.emplace(layer, pays);
  return pays;
}

Status check_conv_desc(const Conv2dDesc& d) {
  if (d.input.rank() != 4 || d.out_channels <= 0 || d.kernel_h <= 0 || d.kernel_w <= 0 ||
      d.stride_h <= 0 || d.stride_w <= 0 || d.groups <= 0 || d.input.c() % d.groups != 0 ||
      d.out_channels % d.groups != 0)
    return error("conv2d: bad description: input ", d.input.str(), ", ", d.out_channels,
                 " filters in ", d.groups, " groups, kernel ", d.kernel_h, "x", d.kernel_w,
                 ", stride ", d.stride_h, "x", d.stride_w);
  const Shape out = d.output();
  if (out.h() <= 0 || out.w() <= 0)
    return error("conv2d: input ", d.input.str(), " is smaller than the ", d.kernel_h, "x",
                 d.kernel_w, " kernel");
  IC_RETURN_IF_ERROR(check_conv_post_ops(d));
  if (d.int8) return Status();  // int8 replaces `compute`
  if (d.compute != DType::f32 && d.compute != DType::bf16)
    return error("conv2d: compute type ", dtype_name(d.compute), " is not supported");
  if (d.activations != DType::f32 && d.activations != DType::bf16)
    return error("conv2d: activations in ", dtype_name(d.activations), " (f32 or bf16 only)");
  return Status();
}

// A pointwise convolution with a fused depthwise one: direct, float32, not timed, on oneDNN's
// blocked layout (x and y converted inside; the pointwise output, the large one, never leaves
// the primitive). Not on NHWC: oneDNN 2.6's fused kernel there wrote wrong values for some
// shapes (MobileNet v2's 16->96 expansion on 48x48 maps at batch 3: zeros where 5.0 was due),
// where its blocked one computes them right (tests/backend: CpuFusedDepthwise).
Result<std::unique_ptr<OpKernel>> make_fused_depthwise(const Conv2dDesc& d, DnnlContext& ctx,
                                                       bool share_weights = true) {
  if (d.compute != DType::f32 || d.activations != DType::f32)
    return error(
        "conv2d: a fused depthwise convolution computes in float32 on float32 "
        "activations here, not ",
        dtype_name(d.compute), " on ", dtype_name(d.activations));
  try {
    return plan_kernel(d, ctx, ConvPlan{algorithm::convolution_direct, dt::f32, tag::any},
                       share_weights);
  } catch (const dnnl::error& e) {
    return error(
        "conv2d: oneDNN cannot fuse the depthwise convolution after the pointwise one "
        "on input ",
        d.input.str(), ": ", e.what());
  }
}

}  // namespace

bool fuses_depthwise(const Conv2dDesc& d, DnnlContext& ctx) {
  if (!d.fused_depthwise || !check_conv_desc(d).ok()) return false;
  Result<std::unique_ptr<OpKernel>> fused = make_fused_depthwise(d, ctx, /*share_weights=*/false);
  if (!fused.ok()) return false;
  if (!conv_timing_enabled(d)) return true;
  // Timed: the fused kernel against the two convolutions apart, each on its own timed plan.
  // The fusion saves the pointwise output's trip through memory, which pays on large maps,
  // but the blocked layout it runs on costs two conversions, which do not pay on small ones
  // (MobileNet v2 on a 2-core Zen 2: batch 32 184 -> 205 images/sec fused, batch 1 176 -> 150).
  Conv2dDesc pointwise = d;
  pointwise.fused_depthwise.reset();
  const Conv2dDesc depthwise = depthwise_part(d);
  PlanCache& cache = plan_cache();
  const std::string key = plan_key(d);
  const auto known = [&]() -> std::optional<bool> {
    const auto found = cache.fused_faster.find(key);
    if (found == cache.fused_faster.end()) return std::nullopt;
    return found->second;
  };
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (const std::optional<bool> answer = known()) return *answer;
  }
  // Built without the lock: make_conv2d times their plans under it.
  Result<std::unique_ptr<OpKernel>> first = make_conv2d(pointwise, ctx);
  Result<std::unique_ptr<OpKernel>> second = make_conv2d(depthwise, ctx);
  if (!first.ok() || !second.ok()) return true;
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (const std::optional<bool> answer = known()) return *answer;
  const double together = time_forward(**fused, d, ctx);
  const double apart =
      time_forward(**first, pointwise, ctx) + time_forward(**second, depthwise, ctx);
  cache.fused_faster.emplace(key, together < apart);
  return together < apart;
}

Result<std::unique_ptr<OpKernel>> make_conv2d(const Conv2dDesc& d, DnnlContext& ctx) {
  IC_RETURN_IF_ERROR(check_conv_desc(d));
  if (d.int8) return make_int8_conv2d(d, ctx);
  if (d.fused_depthwise) return make_fused_depthwise(d, ctx);
  if (depthwise_bf16_applies(d) && compute_type(d, ctx) == dt::bf16) {
    // The layer's type, settled by timing at its first batch size: float32 goes on below.
    DType type = DType::bf16;
    if (conv_timing_enabled(d)) {
      IC_ASSIGN_OR_RETURN(type, timed_compute_type(d, ctx));
    }
    if (type == DType::bf16) return make_depthwise_bf16(d, ctx);
  }
  if (!conv_timing_enabled(d)) return std::unique_ptr<OpKernel>(default_kernel(d, ctx));
  IC_ASSIGN_OR_RETURN(const ConvPlan plan, timed_plan(d, ctx));
  try {
    return plan_kernel(d, ctx, plan, /*share_weights=*/true);
  } catch (const dnnl::error& e) {
    return error("conv2d: building the timed plan for input ", d.input.str(), ": ", e.what());
  }
}

Result<bool> int8_conv_pays(const Conv2dDesc& d, DnnlContext& ctx) {
  IC_RETURN_IF_ERROR(check_conv_desc(d));
  if (!d.int8 || d.int8->output_scale)
    return error("conv2d: int8_conv_pays takes an int8 convolution with float32 output");
  if (!conv_timing_enabled(d)) return true;
  return timed_int8_pays(d, ctx);
}

Result<DType> conv_compute_type(const Conv2dDesc& d, DnnlContext& ctx) {
  IC_RETURN_IF_ERROR(check_conv_desc(d));
  if (d.int8) return error("conv2d: an int8 convolution has no float compute type");
  if (compute_type(d, ctx) != dt::bf16) return DType::f32;
  if (!conv_timing_enabled(d)) return DType::bf16;
  return timed_compute_type(d, ctx);
}

}  // namespace ic::cpu
