// Dense (oneDNN inner product over [N,K] x [K,M]) and the softmax cross-entropy loss.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {
namespace {

using dnnl::inner_product_backward_data;
using dnnl::inner_product_backward_weights;
using dnnl::inner_product_forward;
using dnnl::prop_kind;

// y[N,M] = x[N,K] w[K,M] + b[M]. oneDNN's weights are {M,K}; "io" stores them as [K,M].
// Forward only (training = false): forward_inference, no backward primitives.
class DenseKernel final : public OpKernel {
 public:
  DenseKernel(const DenseDesc& d, DnnlContext& ctx) : d_(d), ctx_(ctx) {
    const dnnl::memory::desc x({d.batch, d.in_features}, dt::f32, tag::nc);
    const dnnl::memory::desc w({d.out_features, d.in_features}, dt::f32, tag::io);
    const dnnl::memory::desc b =
        d.has_bias ? dnnl::memory::desc({d.out_features}, dt::f32, tag::x) : dnnl::memory::desc();
    const dnnl::memory::desc y({d.batch, d.out_features}, dt::f32, tag::nc);
    const prop_kind prop = d.training ? prop_kind::forward_training : prop_kind::forward_inference;
    fwd_pd_ = inner_product_forward::primitive_desc(inner_product_forward::desc(prop, x, w, b, y),
                                                    ctx.engine);
    fwd_ = inner_product_forward(fwd_pd_);
    if (d.training) {
      bwd_data_pd_ = inner_product_backward_data::primitive_desc(
          inner_product_backward_data::desc(x, w, y), ctx.engine, fwd_pd_);
      bwd_data_ = inner_product_backward_data(bwd_data_pd_);
      bwd_weights_pd_ = inner_product_backward_weights::primitive_desc(
          inner_product_backward_weights::desc(x, w, b, y), ctx.engine, fwd_pd_);
      bwd_weights_ = inner_product_backward_weights(bwd_weights_pd_);
    }
    x_ = wrap(x, ctx, nullptr);
    w_ = wrap(w, ctx, nullptr);
    if (d.has_bias) b_ = wrap(b, ctx, nullptr);
    y_ = wrap(y, ctx, nullptr);
    dx_ = wrap(x, ctx, nullptr);
    dw_ = wrap(w, ctx, nullptr);
    if (d.has_bias) db_ = wrap(b, ctx, nullptr);
    dy_ = wrap(y, ctx, nullptr);
  }

  BackwardReads backward_reads() const override { return {true, false}; }
  Status bind(const OpBindings& bind) override {
    IC_RETURN_IF_ERROR(check_bindings("dense", bind, 1, 1, d_.has_bias ? 2 : 1, 0));
    has_grads_ = needs_dx_ = false;  // bind may be called again with other pointers
    x_.set_data_handle(const_cast<void*>(bind.inputs[0]));
    w_.set_data_handle(bind.params[0]);
    if (d_.has_bias) b_.set_data_handle(bind.params[1]);
    y_.set_data_handle(bind.outputs[0]);
    if (d_.training && !bind.output_grads.empty() && bind.output_grads[0]) {
      dy_.set_data_handle(const_cast<void*>(bind.output_grads[0]));
      has_grads_ = true;
      if (bind.param_grads.size() != bind.params.size())
        return error("dense: ", bind.param_grads.size(), " parameter gradients for ",
                     bind.params.size(), " parameters");
      dw_.set_data_handle(bind.param_grads[0]);
      if (d_.has_bias) db_.set_data_handle(bind.param_grads[1]);
      if (!bind.input_grads.empty() && bind.input_grads[0]) {
        dx_.set_data_handle(bind.input_grads[0]);
        needs_dx_ = d_.needs_input_grad;
      }
    }
    // The argument maps, built once so forward/backward allocate nothing.
    fwd_args_ = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_WEIGHTS, w_}, {DNNL_ARG_DST, y_}};
    bwd_data_args_ = {{DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_WEIGHTS, w_}, {DNNL_ARG_DIFF_SRC, dx_}};
    bwd_weights_args_ = {
        {DNNL_ARG_SRC, x_}, {DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_DIFF_WEIGHTS, dw_}};
    if (d_.has_bias) {
      fwd_args_[DNNL_ARG_BIAS] = b_;
      bwd_weights_args_[DNNL_ARG_DIFF_BIAS] = db_;
    }
    return Status();
  }

  void forward(const StepContext&) override { fwd_.execute(ctx_.stream, fwd_args_); }

  void backward(const StepContext&) override {
    if (!has_grads_) return;
    if (needs_dx_) bwd_data_.execute(ctx_.stream, bwd_data_args_);
    bwd_weights_.execute(ctx_.stream, bwd_weights_args_);
  }

 private:
  DenseDesc d_;
  DnnlContext& ctx_;
  inner_product_forward::primitive_desc fwd_pd_;
  inner_product_forward fwd_;
  inner_product_backward_data::primitive_desc bwd_data_pd_;
  inner_product_backward_data bwd_data_;
  inner_product_backward_weights::primitive_desc bwd_weights_pd_;
  inner_product_backward_weights bwd_weights_;
  dnnl::memory x_, w_, b_, y_, dx_, dw_, db_, dy_;
  std::unordered_map<int, dnnl::memory> fwd_args_, bwd_data_args_, bwd_weights_args_;
  bool has_grads_ = false, needs_dx_ = false;
};

// loss = weight * mean over rows with 0 <= label < C of  -Σ_c target_c * log_softmax(x)_c,
// target = onehot(label)*(1-s) + s/C. Since Σ target = 1, a row's loss is
// lse(x) - (1-s)*x[label] - (s/C)*Σx, evaluated with double accumulation.
class SoftmaxCrossEntropyKernel final : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyKernel(const SoftmaxCrossEntropyDesc& d)
      : d_(d),
        row_loss_(static_cast<size_t>(d.batch)),
        row_lse_(static_cast<size_t>(d.batch)),
        row_valid_(static_cast<size_t>(d.batch)) {}

  BackwardReads backward_reads() const override { return {true, false}; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("softmax_cross_entropy", b, 2, 1, 0, 0));
    b_ = b;
    return Status();
  }

  void forward(const StepContext&) override {
    const auto* x = static_cast<const float*>(b_.inputs[0]);
    const auto* labels = static_cast<const int32_t*>(b_.inputs[1]);
    const int64_t C = d_.num_classes;
    const double s = d_.label_smoothing;
    parallel_for(d_.batch, 4, [&](int64_t n) {
      const float* row = x + n * C;
      const int32_t label = labels[n];
      row_valid_[static_cast<size_t>(n)] = label >= 0 && label < C;
      if (!row_valid_[static_cast<size_t>(n)]) return;  // padding row
      float max = row[0];
      for (int64_t c = 1; c < C; ++c) max = std::max(max, row[c]);
      double sum_exp = 0.0, sum_x = 0.0;
      for (int64_t c = 0; c < C; ++c) {
        sum_exp += std::exp(static_cast<double>(row[c] - max));
        sum_x += row[c];
      }
      const double lse = max + std::log(sum_exp);
      row_lse_[static_cast<size_t>(n)] = lse;
      row_loss_[static_cast<size_t>(n)] = lse - (1.0 - s) * row[label] - (s / C) * sum_x;
    });
    double total = 0.0;
    valid_rows_ = 0;
    for (size_t n = 0; n < row_loss_.size(); ++n) {
      if (!row_valid_[n]) continue;
      total += row_loss_[n];
      ++valid_rows_;
    }
    *static_cast<float*>(b_.outputs[0]) =
        valid_rows_ ? static_cast<float>(d_.weight * total / valid_rows_) : 0.f;
  }

  // dx = weight * (softmax(x) - target) / valid_rows; 0 on padding rows. Uses the
  // log-sum-exp that forward stored for each row.
  void backward(const StepContext&) override {
    if (b_.input_grads.empty() || !b_.input_grads[0]) return;
    const auto* x = static_cast<const float*>(b_.inputs[0]);
    const auto* labels = static_cast<const int32_t*>(b_.inputs[1]);
    auto* dx = static_cast<float*>(b_.input_grads[0]);
    const int64_t C = d_.num_classes;
    const double scale = valid_rows_ ? d_.weight / static_cast<double>(valid_rows_) : 0.0;
    const double off = d_.label_smoothing / C;
    const double on = 1.0 - d_.label_smoothing + off;
    parallel_for(d_.batch, 4, [&](int64_t n) {
      float* drow = dx + n * C;
      const int32_t label = labels[n];
      if (!row_valid_[static_cast<size_t>(n)]) {
        std::fill(drow, drow + C, 0.f);
        return;
      }
      const float* row = x + n * C;
      const double lse = row_lse_[static_cast<size_t>(n)];
      for (int64_t c = 0; c < C; ++c) {
        const double p = std::exp(row[c] - lse);
        drow[c] = static_cast<float>(scale * (p - (c == label ? on : off)));
      }
    });
  }

 private:
  SoftmaxCrossEntropyDesc d_;
  std::vector<double> row_loss_, row_lse_;
  std::vector<uint8_t> row_valid_;
  int64_t valid_rows_ = 0;
  OpBindings b_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_dense(const DenseDesc& d, DnnlContext& ctx) {
  if (d.batch <= 0 || d.in_features <= 0 || d.out_features <= 0)
    return error("dense needs positive sizes, got batch ", d.batch, ", in ", d.in_features,
                 ", out ", d.out_features);
  if (d.int8) return make_int8_dense(d, ctx);
  return std::unique_ptr<OpKernel>(std::make_unique<DenseKernel>(d, ctx));
}

Result<std::unique_ptr<OpKernel>> make_softmax_cross_entropy(const SoftmaxCrossEntropyDesc& d) {
  if (d.batch <= 0 || d.num_classes <= 0)
    return error("softmax_cross_entropy needs positive sizes, got batch ", d.batch, ", classes ",
                 d.num_classes);
  return std::unique_ptr<OpKernel>(std::make_unique<SoftmaxCrossEntropyKernel>(d));
}

}  // namespace ic::cpu
