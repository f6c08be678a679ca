// Conv2d on cuDNN's legacy convolution API, NHWC, algorithms chosen once at compile time.
//
// Layouts: the arena holds weights as HWIO (TF-slim's); cuDNN's NHWC filter is KRSC (= OHWI),
// so each forward/backward makes a transposed copy in the workspace (weights change every
// step) and the weight gradient is transposed back into HWIO.
//
// Padding: TensorFlow's SAME puts the odd pixel after (bottom/right); cuDNN pads
// symmetrically. Symmetric cases go to cuDNN as they are; asymmetric ones are padded
// explicitly: x is copied into a zero-bordered buffer in the workspace and cuDNN runs with
// no padding (its input gradient is then cropped back).
//
// bf16 (desc.compute == bf16): x, w and dy are converted to bf16 while staging, cuDNN runs
// with bf16 tensors and float accumulation (CUDNN_DATA_BFLOAT16 data, CUDNN_DATA_FLOAT
// compute), and y, dx, dW are converted back to float32 (the graph's values are float32).
//
// Forward only (desc.training = false): no backward algorithm is chosen; a fused ReLU runs as
// the ReLU kernel in place after the bias; desc.time_algorithms (where conv_timing_enabled)
// times cuDNN's algorithms (cudnnFind*) for this conv, as IC_CUDNN_BENCHMARK=1 does for all.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_common.h"

namespace ic::cuda {
namespace {

// Algorithms needing more scratch than this are passed over (the planner sums workspaces
// over ops that can run at once, so one greedy op should not take the whole device).
constexpr size_t kMaxAlgoWorkspace = size_t{1} << 30;

// IC_CUDNN_BENCHMARK=1 times every algorithm (cudnnFind*, like torch.backends.cudnn.benchmark)
// instead of trusting cuDNN's heuristics (cudnnGet*_v7): slower compiles, sometimes faster steps.
bool benchmark_algorithms() {
  const char* v = std::getenv("IC_CUDNN_BENCHMARK");
  return v && std::strcmp(v, "0") != 0 && v[0] != '\0';
}

// The first successful algorithm within the workspace cap (results come best first).
template <typename Perf, typename Algo>
Status pick(const Perf* perf, int count, const char* direction, Algo& algo, size_t& bytes) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxAlgoWorkspace) {
      algo = perf[i].algo;
      bytes = perf[i].memory;
      return Status();
    }
  }
  return error("cuDNN offers no ", direction, " algorithm for this convolution");
}

class Conv2dKernel final : public OpKernel {
 public:
  Conv2dKernel(const Conv2dDesc& d, CudaContext& ctx) : d_(d), ctx_(ctx) {}

  Status init() {
    if (d_.input.rank() != 4) return error("conv2d wants NHWC input, got ", d_.input.str());
    in_ = nhwc(d_.input);
    out_ = nhwc(d_.output());
    kh_ = d_.kernel_h;
    kw_ = d_.kernel_w;
    ci_ = in_.c;
    wci_ = in_.c / d_.groups;  // the filter's input channels: Ci/G when grouped
    co_ = d_.out_channels;
    elem_ = d_.compute == DType::bf16 ? ElemType::bf16 : ElemType::f32;
    const cudnnDataType_t type = elem_ == ElemType::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    const size_t elem_bytes = elem_ == ElemType::bf16 ? 2 : 4;

    pads_ = tf_pads(in_.h, in_.w, kh_, kw_, d_.stride_h, d_.stride_w, d_.padding);
    explicit_pad_ = pads_.top != pads_.bottom || pads_.left != pads_.right;
    staged_h_ = explicit_pad_ ? in_.h + pads_.top + pads_.bottom : in_.h;
    staged_w_ = explicit_pad_ ? in_.w + pads_.left + pads_.right : in_.w;
    stage_x_ = explicit_pad_ || elem_ == ElemType::bf16;
    stage_y_ = elem_ == ElemType::bf16;
    const int pad_h = explicit_pad_ ? 0 : pads_.top, pad_w = explicit_pad_ ? 0 : pads_.left;

    IC_ASSIGN_OR_RETURN(x_desc_, nhwc_desc(in_.n, staged_h_, staged_w_, ci_, type));
    IC_ASSIGN_OR_RETURN(y_desc_, nhwc_desc(out_.n, out_.h, out_.w, co_, type));
    cudnnFilterDescriptor_t filter = nullptr;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnCreateFilterDescriptor(&filter)));
    w_desc_.reset(filter);
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnSetFilter4dDescriptor(
        filter, type, CUDNN_TENSOR_NHWC, static_cast<int>(co_), static_cast<int>(wci_), kh_, kw_)));
    cudnnConvolutionDescriptor_t conv = nullptr;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&conv)));
    conv_desc_.reset(conv);
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(
        cudnnSetConvolution2dDescriptor(conv, pad_h, pad_w, d_.stride_h, d_.stride_w, 1, 1,
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)));
    const cudnnMathType_t math = elem_ == ElemType::bf16 ? CUDNN_TENSOR_OP_MATH
                                 : ctx_.allow_tf32       ? CUDNN_DEFAULT_MATH
                                                         : CUDNN_FMA_MATH;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnSetConvolutionMathType(conv, math)));
    if (d_.groups > 1)
      IC_RETURN_IF_ERROR(
          IC_CUDA_CHECK(cudnnSetConvolutionGroupCount(conv, static_cast<int>(d_.groups))));

    // cuDNN must agree with TensorFlow's output size, or the padding plan is wrong.
    int n = 0, c = 0, h = 0, w = 0;
    IC_RETURN_IF_ERROR(IC_CUDA_CHECK(
        cudnnGetConvolution2dForwardOutputDim(conv, x_desc_.get(), filter, &n, &c, &h, &w)));
    if (h != out_.h || w != out_.w || c != co_)
      return error("cuDNN computes output [", n, ",", h, ",", w, ",", c, "] for input ",
                   d_.input.str(), " but TensorFlow's is ", d_.output().str());

    IC_RETURN_IF_ERROR(choose_algorithms());

    // Workspace: transposed weights, staged x, staged y/dy, staged dx, dW (KRSC), cuDNN's.
    const int64_t weights = kh_ * kw_ * wci_ * co_;
    Carve carve;
    off_w_ = carve.add(weights * elem_bytes);
    off_dw_ = carve.add(d_.training ? weights * elem_bytes : 0);  // forward only: no dW, no dx
    if (stage_x_) {
      off_x_ = carve.add(in_.n * staged_h_ * staged_w_ * ci_ * elem_bytes);
      off_dx_ = carve.add(d_.training ? in_.n * staged_h_ * staged_w_ * ci_ * elem_bytes : 0);
    }
    if (stage_y_) off_y_ = carve.add(out_.numel() * elem_bytes);
    off_cudnn_ = carve.add(cudnn_bytes_);
    workspace_bytes_ = carve.total();
    return Status();
  }

  size_t workspace_bytes() const override { return workspace_bytes_; }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("conv2d", b, 1, 1, d_.has_bias ? 2 : 1, 0));
    if (!b.workspace) return error("conv2d: null workspace (", workspace_bytes_, " bytes needed)");
    b_ = b;
    return Status();
  }

  void forward(const StepContext&) override {
    const cudaStream_t s = ctx_.stream;
    void* w_t = at_offset(b_.workspace, off_w_);
    IC_CUDA_RECORD(ctx_, launch_hwio_to_ohwi(static_cast<const float*>(b_.params[0]), w_t, elem_,
                                             kh_, kw_, wci_, co_, s));
    const void* x = stage_x(s);
    void* y = stage_y_ ? at_offset(b_.workspace, off_y_) : b_.outputs[0];
    const float one = 1.f, zero = 0.f;
    record(IC_CUDA_CHECK(cudnnConvolutionForward(
        ctx_.cudnn, &one, x_desc_.get(), x, w_desc_.get(), w_t, conv_desc_.get(), fwd_algo_,
        at_offset(b_.workspace, off_cudnn_), cudnn_bytes_, &zero, y_desc_.get(), y)));
    const float* bias = d_.has_bias ? static_cast<const float*>(b_.params[1]) : nullptr;
    auto* out = static_cast<float*>(b_.outputs[0]);
    if (stage_y_)
      IC_CUDA_RECORD(ctx_, launch_crop_convert(y, elem_, out_.h, out_.w, 0, 0, out, out_, bias, s));
    else if (bias)
      IC_CUDA_RECORD(ctx_, launch_bias_add(out, bias, out_.n * out_.h * out_.w, co_, s));
    if (d_.fused_relu) IC_CUDA_RECORD(ctx_, launch_relu_forward(out, out, out_.numel(), s));
    if (d_.fused_activation)
      IC_CUDA_RECORD(
          ctx_, launch_activation_forward(out, out, out_.numel(), act_fn(*d_.fused_activation), s));
  }

  void backward(const StepContext&) override {
    const cudaStream_t s = ctx_.stream;
    const auto* dy = static_cast<const float*>(b_.output_grads.at(0));
    const void* dy_staged = dy;
    if (stage_y_) {
      void* buf = at_offset(b_.workspace, off_y_);
      IC_CUDA_RECORD(ctx_, launch_pad_convert(dy, out_, buf, elem_, out_.h, out_.w, 0, 0, s));
      dy_staged = buf;
    }
    const float one = 1.f, zero = 0.f;
    void* cudnn_ws = at_offset(b_.workspace, off_cudnn_);
    void* dx = b_.input_grads.empty() ? nullptr : b_.input_grads[0];
    if (dx && d_.needs_input_grad) {
      void* w_t = at_offset(b_.workspace, off_w_);
      IC_CUDA_RECORD(ctx_, launch_hwio_to_ohwi(static_cast<const float*>(b_.params[0]), w_t, elem_,
                                               kh_, kw_, wci_, co_, s));
      void* dx_staged = stage_x_ ? at_offset(b_.workspace, off_dx_) : dx;
      record(IC_CUDA_CHECK(cudnnConvolutionBackwardData(
          ctx_.cudnn, &one, w_desc_.get(), w_t, y_desc_.get(), dy_staged, conv_desc_.get(),
          bwd_data_algo_, cudnn_ws, cudnn_bytes_, &zero, x_desc_.get(), dx_staged)));
      if (stage_x_)
        IC_CUDA_RECORD(
            ctx_, launch_crop_convert(dx_staged, elem_, staged_h_, staged_w_,
                                      explicit_pad_ ? pads_.top : 0, explicit_pad_ ? pads_.left : 0,
                                      static_cast<float*>(dx), in_, nullptr, s));
    }
    if (!b_.param_grads.empty() && b_.param_grads[0]) {
      const void* x = stage_x(s);
      void* dw_t = at_offset(b_.workspace, off_dw_);
      record(IC_CUDA_CHECK(cudnnConvolutionBackwardFilter(
          ctx_.cudnn, &one, x_desc_.get(), x, y_desc_.get(), dy_staged, conv_desc_.get(),
          bwd_filter_algo_, cudnn_ws, cudnn_bytes_, &zero, w_desc_.get(), dw_t)));
      IC_CUDA_RECORD(ctx_, launch_ohwi_to_hwio(dw_t, elem_, static_cast<float*>(b_.param_grads[0]),
                                               kh_, kw_, wci_, co_, s));
    }
    if (d_.has_bias && b_.param_grads.size() > 1 && b_.param_grads[1])
      IC_CUDA_RECORD(ctx_, launch_bias_grad(dy, static_cast<float*>(b_.param_grads[1]),
                                            out_.n * out_.h * out_.w, co_, s));
  }

 private:
  void record(const Status& s) { ctx_.record(s); }

  // x as cuDNN reads it: the input itself, or its padded / bf16 copy in the workspace.
  const void* stage_x(cudaStream_t s) {
    if (!stage_x_) return b_.inputs[0];
    void* buf = at_offset(b_.workspace, off_x_);
    IC_CUDA_RECORD(ctx_,
                   launch_pad_convert(static_cast<const float*>(b_.inputs[0]), in_, buf, elem_,
                                      staged_h_, staged_w_, explicit_pad_ ? pads_.top : 0,
                                      explicit_pad_ ? pads_.left : 0, s));
    return buf;
  }

  Status choose_algorithms() {
    const bool find = benchmark_algorithms() || conv_timing_enabled(d_);
    int count = 0;
    std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> fwd{};
    if (find)
      IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithm(
          ctx_.cudnn, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(),
          static_cast<int>(fwd.size()), &count, fwd.data())));
    else
      IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          ctx_.cudnn, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(),
          static_cast<int>(fwd.size()), &count, fwd.data())));
    size_t fwd_bytes = 0, data_bytes = 0, filter_bytes = 0;
    IC_RETURN_IF_ERROR(pick(fwd.data(), count, "forward", fwd_algo_, fwd_bytes));
    if (!d_.training) {
      cudnn_bytes_ = fwd_bytes;
      return Status();
    }

    if (d_.needs_input_grad) {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> data{};
      if (find)
        IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
            ctx_.cudnn, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(),
            static_cast<int>(data.size()), &count, data.data())));
      else
        IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            ctx_.cudnn, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(),
            static_cast<int>(data.size()), &count, data.data())));
      IC_RETURN_IF_ERROR(pick(data.data(), count, "backward-data", bwd_data_algo_, data_bytes));
    }

    std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>
        filter{};
    if (find)
      IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(
          ctx_.cudnn, x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(),
          static_cast<int>(filter.size()), &count, filter.data())));
    else
      IC_RETURN_IF_ERROR(IC_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          ctx_.cudnn, x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(),
          static_cast<int>(filter.size()), &count, filter.data())));
    IC_RETURN_IF_ERROR(
        pick(filter.data(), count, "backward-filter", bwd_filter_algo_, filter_bytes));
    cudnn_bytes_ = std::max({fwd_bytes, data_bytes, filter_bytes});
    return Status();
  }

  Conv2dDesc d_;
  CudaContext& ctx_;
  Nhwc in_, out_;
  int kh_ = 1, kw_ = 1;
  int64_t ci_ = 0, wci_ = 0, co_ = 0;
  ElemType elem_ = ElemType::f32;
  Pads pads_;
  bool explicit_pad_ = false, stage_x_ = false, stage_y_ = false;
  int64_t staged_h_ = 0, staged_w_ = 0;
  TensorDesc x_desc_, y_desc_;
  FilterDesc w_desc_;
  ConvDesc conv_desc_;
  cudnnConvolutionFwdAlgo_t fwd_algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  size_t cudnn_bytes_ = 0;
  size_t off_w_ = 0, off_dw_ = 0, off_x_ = 0, off_dx_ = 0, off_y_ = 0, off_cudnn_ = 0;
  size_t workspace_bytes_ = 0;
  OpBindings b_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> make_conv2d(const Conv2dDesc& d, CudaContext& ctx) {
  if (d.groups < 1 || d.input.rank() != 4 || d.input.c() % d.groups != 0 ||
      d.out_channels % d.groups != 0)
    return error("conv2d: ", d.groups, " groups do not divide input ", d.input.str(), " and ",
                 d.out_channels, " filters");
  IC_RETURN_IF_ERROR(check_conv_post_ops(d));
  if (d.fused_depthwise)  // Backend::fuses_depthwise says no here, so graphs do not ask
    return error("conv2d: no fused depthwise convolution on the CUDA backend");
  auto kernel = std::make_unique<Conv2dKernel>(d, ctx);
  IC_RETURN_IF_ERROR(kernel->init());
  return std::unique_ptr<OpKernel>(std::move(kernel));
}

}  // namespace ic::cuda
