// Batch normalisation (optionally with the following ReLU fused) on oneDNN, NHWC.
// Training: batch mean and (biased) variance normalise x; both are saved for backward and
// folded into the moving statistics with TensorFlow's unbiased n/(n-1) variance.
// Inference: the moving statistics normalise x.
//
// Saved layout (training): [mean f32[C]] [variance f32[C]] [oneDNN ReLU workspace, if fused].
// bf16 compute is accepted and runs in f32 on f32 activations. With bf16 activations (ops.h)
// forward reads and writes bf16 (half the bytes of this memory-bound op; the statistics are
// f32); backward, whose gradients are f32, reads bf16 x as it is (batch_norm_backward.h: oneDNN
// 2.6's backward takes x and dy in one type), recomputing the ReLU's mask from x. Where oneDNN's
// bf16 forward kernel for the shape is a generic loop, forward runs in f32 on x widened, y
// rounded after.
//
// The primitives run on all OpenMP threads. (They once ran on one: oneDNN 2.6's threaded
// batch norm synchronises with barriers, which under libgomp's default long spin were 2-10x
// slower on a shared 2-core machine. With the programs' short spin, GOMP_SPINCOUNT=20000, two
// threads are 25% faster per training step for Inception v3 at 75x75 and depth multiplier
// 0.25, and equal at 299x299.)
#include <omp.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>

#include "backend/cpu/batch_norm_backward.h"
#include "backend/cpu/cpu_common.h"

namespace ic::cpu {
namespace {

using dnnl::batch_normalization_backward;
using dnnl::batch_normalization_forward;
using dnnl::memory;
using dnnl::normalization_flags;
using dnnl::prop_kind;

// Whether oneDNN runs `pd` with generated code (its implementation names say "jit") rather than
// a generic C++ loop.
bool is_jit(const batch_normalization_forward::primitive_desc& pd) {
  return std::string_view(pd.impl_info_str()).find("jit") != std::string_view::npos;
}

class BatchNormKernel final : public OpKernel {
 public:
  BatchNormKernel(const BatchNormDesc& d, DnnlContext& ctx) : d_(d), ctx_(ctx) {
    md_ = nhwc_md(d.input);  // f32: gradients, and x widened for a forward in f32
    x_md_ = nhwc_md(d.input, activation_dt(d.activations));
    widen_x_ = d.activations != DType::f32;
    const int64_t c = d.input.c();
    stat_md_ = memory::desc({c}, dt::f32, tag::x);
    normalization_flags flags = normalization_flags::use_shift;
    if (d.has_gamma) flags |= normalization_flags::use_scale;
    if (d.fused_relu) flags |= normalization_flags::fuse_norm_relu;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const prop_kind kind = d.training ? prop_kind::forward_training : prop_kind::forward_inference;
    const normalization_flags forward_flags =
        d.training ? flags : flags | normalization_flags::use_global_stats;
    auto forward_pd = [&](const memory::desc& md) {
      return batch_normalization_forward::primitive_desc(
          batch_normalization_forward::desc(kind, md, d.epsilon, forward_flags), attr, ctx.engine);
    };
    fwd_pd_ = forward_pd(x_md_);
    // With bf16 activations, forward runs the f32 primitive on x widened, y rounded after (the
    // same answers), where oneDNN has a JIT kernel for the shape in f32 only: its bf16 fallback
    // is a generic loop (`nspc_bnorm:any`; MobileNet v2's 24 channels at 56x56, batch 32, on an
    // AMX Xeon: 51-65 ms a call, against 4-6 ms for the f32 kernel and two conversions of about
    // 1 ms). Backward reads no mask of the forward's (batch_norm_backward.h recomputes it).
    if (widen_x_) {
      const batch_normalization_forward::primitive_desc wide = forward_pd(md_);
      if (is_jit(wide) && !is_jit(fwd_pd_)) {
        fwd_pd_ = wide;
        forward_in_f32_ = true;
      }
    }
    size_t scratch = fwd_pd_.scratchpad_desc().get_size();
    if (d.training) {
      stat_bytes_ = align64(sizeof(float) * static_cast<size_t>(c));
      if (d.fused_relu) relu_ws_bytes_ = align64(fwd_pd_.workspace_desc().get_size());
    }
    if (bf16_backward()) {
      threads_ = omp_get_max_threads();
      bf16_scratch_ =
          aligned_buffer(sizeof(float) * batch_norm_backward_scratch_floats(c, threads_));
    } else if (d.training) {
      bwd_pd_ = batch_normalization_backward::primitive_desc(
          batch_normalization_backward::desc(prop_kind::backward, md_, md_, d.epsilon, flags), attr,
          ctx.engine, fwd_pd_);
      bwd_ = batch_normalization_backward(bwd_pd_);
      scratch = std::max(scratch, bwd_pd_.scratchpad_desc().get_size());
    }
    scratch_bytes_ = align64(scratch);
    if (forward_in_f32_) wide_x_bytes_ = wide_y_bytes_ = align64(md_.get_size());
    fwd_ = batch_normalization_forward(fwd_pd_);
    const double n = static_cast<double>(d.input.n() * d.input.h() * d.input.w());
    unbias_ = static_cast<float>(n > 1 ? n / (n - 1) : 1.0);
  }

  // [oneDNN scratchpad] [x widened to f32: forward_in_f32_]
  // [y in f32 before rounding: forward_in_f32_ only]
  size_t workspace_bytes() const override { return scratch_bytes_ + wide_x_bytes_ + wide_y_bytes_; }
  size_t saved_bytes() const override { return 2 * stat_bytes_ + relu_ws_bytes_; }
  BackwardReads backward_reads() const override { return {true, false}; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("batch_norm", b, 1, 1, d_.has_gamma ? 2 : 1, 2));
    if (workspace_bytes() && !b.workspace)
      return error("batch_norm: needs ", workspace_bytes(), " bytes of workspace, got none");
    if (saved_bytes() && !b.saved)
      return error("batch_norm: needs ", saved_bytes(), " bytes of saved memory, got none");
    try {
      bind_memories(b);
    } catch (const dnnl::error& e) {
      return error("batch_norm: binding oneDNN memory: ", e.what());
    }
    build_args();
    return Status();
  }

  // oneDNN's forward implementation, and where it runs in f32 on bf16 activations.
  std::string implementation() const override {
    return std::string(fwd_pd_.impl_info_str()) + (forward_in_f32_ ? " in f32" : "");
  }

  void forward(const StepContext&) override {
    if (forward_in_f32_) run_steps(widen_steps_, ctx_.stream);
    fwd_.execute(ctx_.stream, fwd_args_);
    if (forward_in_f32_) run_steps(narrow_steps_, ctx_.stream);
    if (d_.training) update_moving_statistics();
  }

  void backward(const StepContext&) override {
    if (!has_grads_) return;
    if (bf16_backward()) {
      batch_norm_backward_bf16(bf16_args_, threads_, static_cast<float*>(bf16_scratch_.get()));
      return;
    }
    bwd_.execute(ctx_.stream, bwd_args_);
  }

 private:
  void bind_memories(const OpBindings& b) {
    has_grads_ = false;  // bind may be called again with other pointers
    relu_ws_ = memory();
    const dnnl::engine& eng = ctx_.engine;
    x_ = wrap(x_md_, ctx_, b.inputs[0]);
    y_ = memory(x_md_, eng, b.outputs[0]);
    widen_steps_.clear();
    narrow_steps_.clear();
    fwd_x_ = x_;
    fwd_y_ = y_;
    if (forward_in_f32_) {
      fwd_x_ = memory(md_, eng, static_cast<char*>(b.workspace) + scratch_bytes_);
      widen_steps_.push_back(reorder_step(x_, fwd_x_));
      fwd_y_ = memory(md_, eng, static_cast<char*>(b.workspace) + scratch_bytes_ + wide_x_bytes_);
      narrow_steps_.push_back(reorder_step(fwd_y_, y_));
    }
    beta_ = memory(stat_md_, eng, b.params[0]);
    if (d_.has_gamma) gamma_ = memory(stat_md_, eng, b.params[1]);
    scratch_ = memory(fwd_pd_.scratchpad_desc(), eng, b.workspace);
    moving_mean_ = static_cast<float*>(b.state[0]);
    moving_var_ = static_cast<float*>(b.state[1]);
    if (!d_.training) {
      mean_ = memory(stat_md_, eng, moving_mean_);
      var_ = memory(stat_md_, eng, moving_var_);
      return;
    }
    auto* saved = static_cast<char*>(b.saved);
    mean_ = memory(stat_md_, eng, saved);
    var_ = memory(stat_md_, eng, saved + stat_bytes_);
    if (d_.fused_relu) relu_ws_ = memory(fwd_pd_.workspace_desc(), eng, saved + 2 * stat_bytes_);

    if (b.output_grads.empty() || !b.output_grads[0]) return;
    has_grads_ = true;
    if (b.param_grads.size() != b.params.size())
      throw dnnl::error(dnnl_invalid_arguments, "one gradient per parameter expected");
    void* dx = b.input_grads.empty() ? nullptr : b.input_grads[0];
    if (bf16_backward()) {
      bind_bf16_backward(b, dx);
      return;
    }
    dy_ = wrap(md_, ctx_, b.output_grads[0]);
    if (!dx) {  // oneDNN always writes diff_src: give it a private buffer
      own_dx_ = aligned_buffer(md_.get_size());
      dx = own_dx_.get();
    }
    dx_ = memory(md_, eng, dx);
    scratch_bwd_ = memory(bwd_pd_.scratchpad_desc(), eng, b.workspace);

    dbeta_ = memory(stat_md_, eng, b.param_grads[0]);
    if (d_.has_gamma) dgamma_ = memory(stat_md_, eng, b.param_grads[1]);
  }

  // Training on bf16 activations: backward is batch_norm_backward_bf16, not oneDNN's.
  bool bf16_backward() const { return widen_x_ && d_.training; }

  void bind_bf16_backward(const OpBindings& b, void* dx) {
    BatchNormBackwardArgs& a = bf16_args_;
    a.x = static_cast<const uint16_t*>(b.inputs[0]);
    a.dy = static_cast<const float*>(b.output_grads[0]);
    a.dx = static_cast<float*>(dx);
    a.mean = static_cast<const float*>(mean_.get_data_handle());
    a.variance = static_cast<const float*>(var_.get_data_handle());
    a.gamma = d_.has_gamma ? static_cast<const float*>(b.params[1]) : nullptr;
    a.beta = static_cast<const float*>(b.params[0]);
    a.epsilon = d_.epsilon;
    a.relu = d_.fused_relu;
    a.rows = d_.input.n() * d_.input.h() * d_.input.w();
    a.channels = d_.input.c();
    a.dbeta = static_cast<float*>(b.param_grads[0]);
    a.dgamma = d_.has_gamma ? static_cast<float*>(b.param_grads[1]) : nullptr;
  }

  // The argument maps, built once so forward/backward allocate nothing.
  void build_args() {
    fwd_args_ = {{DNNL_ARG_SRC, fwd_x_},  {DNNL_ARG_DST, fwd_y_},
                 {DNNL_ARG_MEAN, mean_},  {DNNL_ARG_VARIANCE, var_},
                 {DNNL_ARG_SHIFT, beta_}, {DNNL_ARG_SCRATCHPAD, scratch_}};
    if (d_.has_gamma) fwd_args_[DNNL_ARG_SCALE] = gamma_;
    if (relu_ws_) fwd_args_[DNNL_ARG_WORKSPACE] = relu_ws_;
    bwd_args_.clear();
    if (!has_grads_) return;
    bwd_args_ = {{DNNL_ARG_SRC, x_},
                 {DNNL_ARG_MEAN, mean_},
                 {DNNL_ARG_VARIANCE, var_},
                 {DNNL_ARG_DIFF_DST, dy_},
                 {DNNL_ARG_DIFF_SRC, dx_},
                 {DNNL_ARG_SHIFT, beta_},  // unused by the math, but oneDNN 2.6 insists
                 {DNNL_ARG_DIFF_SHIFT, dbeta_},
                 {DNNL_ARG_SCRATCHPAD, scratch_bwd_}};
    if (d_.has_gamma) {
      bwd_args_[DNNL_ARG_SCALE] = gamma_;
      bwd_args_[DNNL_ARG_DIFF_SCALE] = dgamma_;
    }
    if (relu_ws_) bwd_args_[DNNL_ARG_WORKSPACE] = relu_ws_;
  }

  // moving = moving*decay + batch*(1-decay), the variance made unbiased first.
  void update_moving_statistics() {
    const auto* mean = static_cast<const float*>(mean_.get_data_handle());
    const auto* var = static_cast<const float*>(var_.get_data_handle());
    const float decay = d_.decay, rate = 1.f - d_.decay;
    for (int64_t c = 0; c < d_.input.c(); ++c) {
      moving_mean_[c] = moving_mean_[c] * decay + mean[c] * rate;
      moving_var_[c] = moving_var_[c] * decay + var[c] * unbias_ * rate;
    }
  }

  BatchNormDesc d_;
  DnnlContext& ctx_;
  memory::desc md_, x_md_, stat_md_;  // md_: f32 (gradients); x_md_: the activations' type
  bool widen_x_ = false;              // bf16 activations
  bool forward_in_f32_ = false;       // bf16 activations whose forward runs the f32 primitive
  int threads_ = 1;                   // batch_norm_backward_bf16's
  AlignedBuffer bf16_scratch_;
  BatchNormBackwardArgs bf16_args_;
  size_t wide_x_bytes_ = 0, wide_y_bytes_ = 0;
  batch_normalization_forward::primitive_desc fwd_pd_;
  batch_normalization_forward fwd_;
  batch_normalization_backward::primitive_desc bwd_pd_;
  batch_normalization_backward bwd_;
  size_t stat_bytes_ = 0, relu_ws_bytes_ = 0, scratch_bytes_ = 0;
  float unbias_ = 1.f;

  memory x_, y_, beta_, gamma_, mean_, var_, relu_ws_, scratch_, scratch_bwd_;
  memory fwd_x_, fwd_y_;  // what the forward primitive reads and writes
  std::vector<DnnlStep> widen_steps_, narrow_steps_;
  memory dy_, dx_, dbeta_, dgamma_;
  std::unordered_map<int, memory> fwd_args_, bwd_args_;
  float* moving_mean_ = nullptr;
  float* moving_var_ = nullptr;
  AlignedBuffer own_dx_;
  bool has_grads_ = false;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_batch_norm(const BatchNormDesc& d, DnnlContext& ctx) {
  if (d.input.rank() != 4 || d.input.numel() == 0)
    return error("batch_norm needs a non-empty NHWC input, got ", d.input.str());
  if (d.activations != DType::f32 && d.activations != DType::bf16)
    return error("batch_norm: activations in ", dtype_name(d.activations), " (f32 or bf16 only)");
  return std::unique_ptr<OpKernel>(std::make_unique<BatchNormKernel>(d, ctx));
}

}  // namespace ic::cpu
