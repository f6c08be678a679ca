// Depthwise convolution for inference on bf16 activations, as a plain loop (depthwise_loops.h):
// x widened to float as it is read, multiplied by the f32 weights and summed in float, the bias
// and activation applied, y rounded to bf16 once. oneDNN 2.6's bf16 depthwise kernel does no
// better than a third of memory speed (a depthwise convolution has no dot product for bf16
// instructions to do), and its float32 one needs the activations widened into a copy and the
// output rounded in another pass. On a 2-core AMX Xeon those casts took 15% of EfficientNet-B0's
// bf16 inference at batch 32, around depthwise layers kept in float32 because they ran faster
// there.
#include <string>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/depthwise_loops.h"

namespace ic::cpu {

namespace {

DepthwiseActivation depthwise_activation(const Conv2dDesc& d) {
  if (d.fused_relu) return DepthwiseActivation::relu;
  if (!d.fused_activation) return DepthwiseActivation::none;
  switch (*d.fused_activation) {
    case Activation::relu6: return DepthwiseActivation::relu6;
    case Activation::sigmoid: return DepthwiseActivation::sigmoid;
    case Activation::swish: return DepthwiseActivation::swish;
  }
  return DepthwiseActivation::none;
}

class DepthwiseBf16Kernel final : public OpKernel {
 public:
  explicit DepthwiseBf16Kernel(const Conv2dDesc& d)
      : d_(d), out_(d.output()), activation_(depthwise_activation(d)) {
    const Pads pads = tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h,
                              d.stride_w, d.padding);
    geometry_ = {d.input.h(), d.input.w(), d.input.c(), out_.w(), d.kernel_h,
                 d.kernel_w,  d.stride_h,  d.stride_w,  pads.top, pads.left};
    packed_weights_.resize(static_cast<size_t>(d.weight_count()));
    packed_bias_.assign(static_cast<size_t>(d.out_channels), 0.f);  // zeros without a bias
  }
  BackwardReads backward_reads() const override { return {false, false}; }
  std::string implementation() const override { return "ic:depthwise f32 sums nhwc bf16"; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("depthwise conv2d", b, 1, 1, d_.has_bias ? 2 : 1, 0));
    b_ = b;
    packed_ = false;  // other weights, maybe
    return Status();
  }
  void forward(const StepContext&) override {
    if (!packed_ || !d_.constant_weights) pack();
    const auto* x = static_cast<const uint16_t*>(b_.inputs[0]);
    const float* w = packed_weights_.data();
    const float* bias = packed_bias_.data();
    auto* y = static_cast<uint16_t*>(b_.outputs[0]);
    const int64_t rows = out_.h(), image_in = d_.input.h() * d_.input.w() * d_.input.c();
    const int64_t row_out = out_.w() * out_.c();
    parallel_for(out_.n() * rows, 1, [&](int64_t i) {
      const int64_t n = i / rows;
      depthwise_row_bf16(x + n * image_in, w, bias, geometry_, i % rows, activation_,
                         y + i * row_out);
    });
  }
  void backward(const StepContext&) override {}  // forward only (depthwise_bf16_applies)

 private:
  // The weights and bias in the loops' order (pack_depthwise): once for constant weights (an
  // inference graph's folded ones), else at every forward.
  void pack() {
    const int64_t channels = d_.out_channels;
    pack_depthwise(static_cast<const float*>(b_.params[0]), d_.weight_count() / channels, channels,
                   packed_weights_.data());
    if (d_.has_bias)
      pack_depthwise(static_cast<const float*>(b_.params[1]), 1, channels, packed_bias_.data());
    packed_ = true;
  }

  Conv2dDesc d_;
  Shape out_;
  DepthwiseActivation activation_;
  DepthwiseGeometry geometry_;
  std::vector<float> packed_weights_, packed_bias_;
  bool packed_ = false;
  OpBindings b_;
};

}  // namespace

bool depthwise_bf16_applies(const Conv2dDesc& d) {
  return !d.training && !d.int8 && d.depthwise() && d.activations == DType::bf16 &&
         d.compute == DType::bf16;
}

std::unique_ptr<OpKernel> make_depthwise_bf16(const Conv2dDesc& d) {
  return std::make_unique<DepthwiseBf16Kernel>(d);
}

}  // namespace ic::cpu
