// Batch normalisation on cuDNN (NHWC, spatial-persistent mode in training) with TensorFlow's
// semantics (ops.h):
//   - moving averages: cuDNN computes running = running*(1-factor) + batch*factor with the
//     unbiased batch variance, so factor = 1 - decay gives moving*decay + batch*(1-decay);
//   - beta-only (TF-slim Inception): gamma is a fixed buffer of ones and cuDNN's dgamma goes
//     to scratch;
//   - fused ReLU: our own kernel after cuDNN's forward; the backward recomputes the ReLU mask
//     from x and the saved statistics (batch_norm's backward reads x, params and saved, as
//     on the CPU), masks dy into the workspace, then runs cuDNN's backward.
// Statistics, moving averages and the normalisation are float32 in both precisions.
#include "backend/cuda/cuda_common.h"

namespace ic::cuda {
namespace {

class BatchNormKernel final : public OpKernel {
 public:
  BatchNormKernel(const BatchNormDesc& d, CudaContext& ctx) : d_(d), ctx_(ctx) {}

  Status init() {
    if (d_.input.rank() != 4) return error("batch_norm wants NHWC input, got ", d_.input.str());
    if (d_.epsilon < CUDNN_BN_MIN_EPSILON)
      return error("batch_norm epsilon ", d_.epsilon, " is below cuDNN's minimum ",
                   CUDNN_BN_MIN_EPSILON);
    s_ = nhwc(d_.input);
    rows_ = s_.n * s_.h * s_.w;
    mode_ = d_.training ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL;
    IC_ASSIGN_OR_RETURN(x_desc_, nhwc_desc(s_.n, s_.h, s_.w, s_.c, CUDNN_DATA_FLOAT));
    cudnnTensorDescriptor_t raw = nullptr;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnCreateTensorDescriptor(&raw)));
    stats_desc_.reset(raw);
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnDeriveBNTensorDescriptor(raw, x_desc_.get(), mode_)));
    if (!d_.has_gamma) {
      IC_ASSIGN_OR_RETURN(ones_, device_alloc(s_.c * sizeof(float)));
      IC_RETURN_IF_ERROR(IC_CUDA_CHECK(launch_fill(ones_.as<float>(), 1.f, s_.c, ctx_.stream)));
    }
    Carve saved;
    saved_mean_ = saved.add(s_.c * sizeof(float));
    saved_inv_std_ = saved.add(s_.c * sizeof(float));
    saved_bytes_ = d_.training ? saved.total() : 0;
    Carve ws;
    if (!d_.has_gamma) off_dgamma_ = ws.add(s_.c * sizeof(float));
    if (d_.fused_relu) off_masked_ = ws.add(s_.numel() * sizeof(float));
    workspace_bytes_ = d_.training ? ws.total() : 0;
    return Status();
  }

  size_t workspace_bytes() const override { return workspace_bytes_; }
  size_t saved_bytes() const override { return saved_bytes_; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("batch_norm", b, 1, 1, d_.has_gamma ? 2 : 1, 2));
    if (d_.training && !b.saved) return error("batch_norm: null saved buffer");
    if (workspace_bytes_ && !b.workspace) return error("batch_norm: null workspace");
    b_ = b;
    return Status();
  }

  void forward(const StepContext&) override {
    const float one = 1.f, zero = 0.f;
    auto* y = static_cast<float*>(b_.outputs[0]);
    if (d_.training) {
      ctx_.record(IC_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(
          ctx_.cudnn, mode_, &one, &zero, x_desc_.get(), b_.inputs[0], x_desc_.get(), y,
          stats_desc_.get(), gamma(), b_.params[0], 1.0 - static_cast<double>(d_.decay),
          b_.state[0], b_.state[1], d_.epsilon, at_offset(b_.saved, saved_mean_),
          at_offset(b_.saved, saved_inv_std_))));
    } else {
      ctx_.record(IC_CUDA_CHECK(cudnnBatchNormalizationForwardInference(
          ctx_.cudnn, mode_, &one, &zero, x_desc_.get(), b_.inputs[0], x_desc_.get(), y,
          stats_desc_.get(), gamma(), b_.params[0], b_.state[0], b_.state[1], d_.epsilon)));
    }
    if (d_.fused_relu)
      ctx_.record(IC_CUDA_CHECK(launch_relu_forward(y, y, s_.numel(), ctx_.stream)));
  }

  void backward(const StepContext&) override {
    if (!d_.training) {
      ctx_.record(error("batch_norm: backward on an inference graph"));
      return;
    }
    void* dx = b_.input_grads.empty() ? nullptr : b_.input_grads[0];
    if (!dx || b_.param_grads.empty() || !b_.param_grads[0]) {
      ctx_.record(error("batch_norm: backward needs the input and beta gradient buffers"));
      return;
    }
    const auto* mean = static_cast<const float*>(at_offset(b_.saved, saved_mean_));
    const auto* inv_std = static_cast<const float*>(at_offset(b_.saved, saved_inv_std_));
    const void* dy = b_.output_grads.at(0);
    if (d_.fused_relu) {
      auto* masked = static_cast<float*>(at_offset(b_.workspace, off_masked_));
      ctx_.record(IC_CUDA_CHECK(launch_bn_relu_mask(
          static_cast<const float*>(b_.inputs[0]), static_cast<const float*>(dy), mean, inv_std,
          d_.has_gamma ? static_cast<const float*>(b_.params[1]) : nullptr,
          static_cast<const float*>(b_.params[0]), masked, rows_, s_.c, ctx_.stream)));
      dy = masked;
    }
    void* dgamma = d_.has_gamma && b_.param_grads.size() > 1 && b_.param_grads[1]
                       ? b_.param_grads[1]
                       : at_offset(b_.workspace, off_dgamma_);
    const float one = 1.f, zero = 0.f;
    ctx_.record(IC_CUDA_CHECK(cudnnBatchNormalizationBackward(
        ctx_.cudnn, mode_, &one, &zero, &one, &zero, x_desc_.get(), b_.inputs[0], x_desc_.get(), dy,
        x_desc_.get(), dx, stats_desc_.get(), gamma(), dgamma, b_.param_grads[0], d_.epsilon, mean,
        inv_std)));
  }

 private:
  const void* gamma() const { return d_.has_gamma ? b_.params[1] : ones_.data(); }

  BatchNormDesc d_;
  CudaContext& ctx_;
  Nhwc s_;
  int64_t rows_ = 0;
  cudnnBatchNormMode_t mode_ = CUDNN_BATCHNORM_SPATIAL;
  TensorDesc x_desc_, stats_desc_;
  DeviceBuffer ones_;
  size_t saved_mean_ = 0, saved_inv_std_ = 0, saved_bytes_ = 0;
  size_t off_dgamma_ = 0, off_masked_ = 0, workspace_bytes_ = 0;
  OpBindings b_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_batch_norm(const BatchNormDesc& d, CudaContext& ctx) {
  auto kernel = std::make_unique<BatchNormKernel>(d, ctx);
  IC_RETURN_IF_ERROR(kernel->init());
  return std::unique_ptr<OpKernel>(std::move(kernel));
}

}  // namespace ic::cuda
