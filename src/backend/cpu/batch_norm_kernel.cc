// Batch normalisation (optionally with the following ReLU fused) on oneDNN, NHWC.
// Training: batch mean and (biased) variance normalise x; both are saved for backward and
// folded into the moving statistics with TensorFlow's unbiased n/(n-1) variance.
// Inference: the moving statistics normalise x.
//
// Saved layout (training): [mean f32[C]] [variance f32[C]] [oneDNN ReLU workspace, if fused].
// bf16 compute is accepted and runs in f32: x and y live in f32 and a conversion would cost
// more than it saves in a memory-bound op.
//
// The primitives run on all OpenMP threads. (They once ran on one: oneDNN 2.6's threaded
// batch norm synchronises with barriers, which under libgomp's default long spin were 2-10x
// slower on a shared 2-core machine. With the programs' short spin, GOMP_SPINCOUNT=20000, two
// threads are 25% faster per training step for Inception v3 at 75x75 and depth multiplier
// 0.25, and equal at 299x299.)
#include <algorithm>
#include <unordered_map>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {
namespace {

using dnnl::batch_normalization_backward;
using dnnl::batch_normalization_forward;
using dnnl::memory;
using dnnl::normalization_flags;
using dnnl::prop_kind;

class BatchNormKernel final : public OpKernel {
 public:
  BatchNormKernel(const BatchNormDesc& d, DnnlContext& ctx) : d_(d), ctx_(ctx) {
    md_ = nhwc_md(d.input);
    const int64_t c = d.input.c();
    stat_md_ = memory::desc({c}, dt::f32, tag::x);
    normalization_flags flags = normalization_flags::use_shift;
    if (d.has_gamma) flags |= normalization_flags::use_scale;
    if (d.fused_relu) flags |= normalization_flags::fuse_norm_relu;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (d.training) {
      fwd_pd_ = batch_normalization_forward::primitive_desc(
          batch_normalization_forward::desc(prop_kind::forward_training, md_, d.epsilon, flags),
          attr, ctx.engine);
      bwd_pd_ = batch_normalization_backward::primitive_desc(
          batch_normalization_backward::desc(prop_kind::backward, md_, md_, d.epsilon, flags), attr,
          ctx.engine, fwd_pd_);
      bwd_ = batch_normalization_backward(bwd_pd_);
      stat_bytes_ = align64(sizeof(float) * static_cast<size_t>(c));
      if (d.fused_relu) relu_ws_bytes_ = align64(fwd_pd_.workspace_desc().get_size());
      scratch_bytes_ = align64(
          std::max(fwd_pd_.scratchpad_desc().get_size(), bwd_pd_.scratchpad_desc().get_size()));
    } else {
      fwd_pd_ = batch_normalization_forward::primitive_desc(
          batch_normalization_forward::desc(prop_kind::forward_inference, md_, d.epsilon,
                                            flags | normalization_flags::use_global_stats),
          attr, ctx.engine);
      scratch_bytes_ = align64(fwd_pd_.scratchpad_desc().get_size());
    }
    fwd_ = batch_normalization_forward(fwd_pd_);
    const double n = static_cast<double>(d.input.n() * d.input.h() * d.input.w());
    unbias_ = static_cast<float>(n > 1 ? n / (n - 1) : 1.0);
  }

  size_t workspace_bytes() const override { return scratch_bytes_; }
  size_t saved_bytes() const override { return 2 * stat_bytes_ + relu_ws_bytes_; }
  BackwardReads backward_reads() const override { return {true, false}; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("batch_norm", b, 1, 1, d_.has_gamma ? 2 : 1, 2));
    if (scratch_bytes_ && !b.workspace)
      return error("batch_norm: needs ", scratch_bytes_, " bytes of workspace, got none");
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

  void forward(const StepContext&) override {
    fwd_.execute(ctx_.stream, fwd_args_);
    if (d_.training) update_moving_statistics();
  }

  void backward(const StepContext&) override {
    if (has_grads_) bwd_.execute(ctx_.stream, bwd_args_);
  }

 private:
  void bind_memories(const OpBindings& b) {
    has_grads_ = false;  // bind may be called again with other pointers
    relu_ws_ = memory();
    const dnnl::engine& eng = ctx_.engine;
    x_ = wrap(md_, ctx_, b.inputs[0]);
    y_ = memory(md_, eng, b.outputs[0]);
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
    dy_ = wrap(md_, ctx_, b.output_grads[0]);
    void* dx = b.input_grads.empty() ? nullptr : b.input_grads[0];
    if (!dx) {  // oneDNN always writes diff_src: give it a private buffer
      own_dx_ = aligned_buffer(md_.get_size());
      dx = own_dx_.get();
    }
    dx_ = memory(md_, eng, dx);
    scratch_bwd_ = memory(bwd_pd_.scratchpad_desc(), eng, b.workspace);
    dbeta_ = memory(stat_md_, eng, b.param_grads[0]);
    if (d_.has_gamma) dgamma_ = memory(stat_md_, eng, b.param_grads[1]);
  }

  // The argument maps, built once so forward/backward allocate nothing.
  void build_args() {
    fwd_args_ = {{DNNL_ARG_SRC, x_},      {DNNL_ARG_DST, y_},
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
  memory::desc md_, stat_md_;
  batch_normalization_forward::primitive_desc fwd_pd_;
  batch_normalization_forward fwd_;
  batch_normalization_backward::primitive_desc bwd_pd_;
  batch_normalization_backward bwd_;
  size_t stat_bytes_ = 0, relu_ws_bytes_ = 0, scratch_bytes_ = 0;
  float unbias_ = 1.f;

  memory x_, y_, beta_, gamma_, mean_, var_, relu_ws_, scratch_, scratch_bwd_;
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
  return std::unique_ptr<OpKernel>(std::make_unique<BatchNormKernel>(d, ctx));
}

}  // namespace ic::cpu
