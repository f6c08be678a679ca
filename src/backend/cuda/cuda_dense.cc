// Dense (fully connected) layers on cuBLAS. Our matrices are row-major; cuBLAS is
// column-major, where a row-major [r,c] matrix reads as its transpose [c,r]. So
//   y[N,M] = x[N,K] w[K,M]      is   yᵀ = wᵀ xᵀ      gemm(N, N, m=M, n=N, k=K)
//   dx[N,K] = dy[N,M] wᵀ        is   dxᵀ = w dyᵀ     gemm(T, N, m=K, n=N, k=M)
//   dw[K,M] = xᵀ dy             is   dwᵀ = dyᵀ x     gemm(N, T, m=M, n=K, k=N)
// and db = column sums of dy (our kernel, fixed order).
#include <climits>

#include "backend/cuda/cuda_common.h"

namespace ic::cuda {
namespace {

class DenseKernel final : public OpKernel {
 public:
  DenseKernel(const DenseDesc& d, CudaContext& ctx)
      : d_(d),
        ctx_(ctx),
        n_(static_cast<int>(d.batch)),
        k_(static_cast<int>(d.in_features)),
        m_(static_cast<int>(d.out_features)),
        compute_(ctx.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F) {}

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("dense", b, 1, 1, d_.has_bias ? 2 : 1, 0));
    b_ = b;
    return Status();
  }

  void forward(const StepContext&) override {
    const float one = 1.f, zero = 0.f;
    ctx_.record(IC_CUDA_CHECK(cublasGemmEx(ctx_.cublas, CUBLAS_OP_N, CUBLAS_OP_N, m_, n_, k_, &one,
                                           b_.params[0], CUDA_R_32F, m_, b_.inputs[0], CUDA_R_32F,
                                           k_, &zero, b_.outputs[0], CUDA_R_32F, m_, compute_,
                                           CUBLAS_GEMM_DEFAULT)));
    if (d_.has_bias)
      ctx_.record(IC_CUDA_CHECK(launch_bias_add(static_cast<float*>(b_.outputs[0]),
                                                static_cast<const float*>(b_.params[1]), n_, m_,
                                                ctx_.stream)));
  }

  void backward(const StepContext&) override {
    const float one = 1.f, zero = 0.f;
    const void* dy = b_.output_grads.at(0);
    void* dx = b_.input_grads.empty() ? nullptr : b_.input_grads[0];
    if (dx && d_.needs_input_grad)
      ctx_.record(IC_CUDA_CHECK(cublasGemmEx(
          ctx_.cublas, CUBLAS_OP_T, CUBLAS_OP_N, k_, n_, m_, &one, b_.params[0], CUDA_R_32F, m_, dy,
          CUDA_R_32F, m_, &zero, dx, CUDA_R_32F, k_, compute_, CUBLAS_GEMM_DEFAULT)));
    if (!b_.param_grads.empty() && b_.param_grads[0])
      ctx_.record(IC_CUDA_CHECK(cublasGemmEx(ctx_.cublas, CUBLAS_OP_N, CUBLAS_OP_T, m_, k_, n_,
                                             &one, dy, CUDA_R_32F, m_, b_.inputs[0], CUDA_R_32F, k_,
                                             &zero, b_.param_grads[0], CUDA_R_32F, m_, compute_,
                                             CUBLAS_GEMM_DEFAULT)));
    if (d_.has_bias && b_.param_grads.size() > 1 && b_.param_grads[1])
      ctx_.record(IC_CUDA_CHECK(launch_bias_grad(static_cast<const float*>(dy),
                                                 static_cast<float*>(b_.param_grads[1]), n_, m_,
                                                 ctx_.stream)));
  }

 private:
  DenseDesc d_;
  CudaContext& ctx_;
  int n_, k_, m_;
  cublasComputeType_t compute_;
  OpBindings b_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_dense(const DenseDesc& d, CudaContext& ctx) {
  if (d.batch <= 0 || d.in_features <= 0 || d.out_features <= 0)
    return error("dense needs positive sizes, got [", d.batch, ",", d.in_features, "] x [",
                 d.in_features, ",", d.out_features, "]");
  if (d.batch > INT_MAX || d.in_features > INT_MAX || d.out_features > INT_MAX)
    return error("dense sizes exceed cuBLAS's int range");
  return std::unique_ptr<OpKernel>(std::make_unique<DenseKernel>(d, ctx));
}

}  // namespace ic::cuda
