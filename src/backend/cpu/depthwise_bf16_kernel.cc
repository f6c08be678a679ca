// Depthwise convolution for inference on bf16 activations, as a plain loop (depthwise_loops.h):
// x widened to float as it is read, multiplied by the f32 weights and summed in float, the bias
// and activation applied, y rounded to bf16 once. oneDNN 2.6's bf16 depthwise kernel does no
// better than a third of memory speed (a depthwise convolution has no dot product for bf16
// instructions to do), and its float32 one needs the activations widened into a copy and the
// output rounded in another pass. On a 2-core AMX Xeon those casts took 15% of EfficientNet-B0's
// bf16 inference at batch 32, around depthwise layers kept in float32 because they ran faster
// there.
#include <memory>
#include <optional>
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
  DepthwiseBf16Kernel(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights)
      : d_(d),
        ctx_(ctx),
        share_weights_(share_weights),
        out_(d.output()),
        activation_(depthwise_activation(d)),
        zero_bias_(d.has_bias ? 0 : static_cast<size_t>(d.out_channels), 0.f) {
    const Pads pads = tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h,
                              d.stride_w, d.padding);
    geometry_ = {d.input.h(), d.input.w(), d.input.c(), out_.w(), d.kernel_h,
                 d.kernel_w,  d.stride_h,  d.stride_w,  pads.top, pads.left};
  }
  BackwardReads backward_reads() const override { return {false, false}; }
  std::string implementation() const override { return "ic:depthwise f32 sums nhwc bf16"; }
  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("depthwise conv2d", b, 1, 1, d_.has_bias ? 2 : 1, 0));
    b_ = b;
    const int64_t channels = d_.out_channels;
    weights_.emplace(kTapsChannels, d_.weight_count() / channels, channels, b.params[0]);
    bias_.reset();
    if (d_.has_bias) bias_.emplace(kChannels, 1, channels, b.params[1]);
    if (d_.constant_weights) {  // an inference graph's folded weights: packed once, shared
      share(*weights_);
      if (bias_) share(*bias_);
    }
    return Status();
  }
  void forward(const StepContext&) override {
    const auto* x = static_cast<const uint16_t*>(b_.inputs[0]);
    const float* w = weights_->get();
    const float* bias = bias_ ? bias_->get() : zero_bias_.data();
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
  // The names of pack_depthwise's layouts in the backend's shared converted weights.
  static constexpr const char* kTapsChannels = "ic:depthwise taps x channels";
  static constexpr const char* kChannels = "ic:depthwise channels";

  // A parameter in the loops' order (pack_depthwise): packed at every forward into `own`, or,
  // for constant weights, once into `shared`, which the kernels of other graphs reading the
  // same parameter reuse (DnnlContext::converted_weights).
  struct Packed {
    Packed(const char* layout, int64_t taps, int64_t channels, const void* natural)
        : layout(layout),
          taps(taps),
          channels(channels),
          natural(static_cast<const float*>(natural)) {}
    const char* layout;
    int64_t taps, channels;
    const float* natural;
    std::shared_ptr<ConvertedWeights> shared;
    std::vector<float> own;

    size_t count() const { return static_cast<size_t>(taps * channels); }
    const float* get() {
      if (!shared) {
        own.resize(count());
        pack_depthwise(natural, taps, channels, own.data());
        return own.data();
      }
      auto* data = static_cast<float*>(shared->data.get());
      if (!shared->ready) {
        pack_depthwise(natural, taps, channels, data);
        shared->ready = true;
      }
      return data;
    }
  };

  void share(Packed& p) {
    p.shared =
        converted_weights(ctx_, p.natural, {}, p.layout, p.count() * sizeof(float), share_weights_);
  }

  Conv2dDesc d_;
  DnnlContext& ctx_;
  bool share_weights_;
  Shape out_;
  DepthwiseActivation activation_;
  DepthwiseGeometry geometry_;
  std::vector<float> zero_bias_;          // without a bias
  std::optional<Packed> weights_, bias_;  // set by bind; no bias_ without a bias
  OpBindings b_;
};

}  // namespace

bool depthwise_bf16_applies(const Conv2dDesc& d) {
  return !d.training && !d.int8 && d.depthwise() && d.activations == DType::bf16 &&
         d.compute == DType::bf16;
}

std::unique_ptr<OpKernel> make_depthwise_bf16(const Conv2dDesc& d, DnnlContext& ctx,
                                              bool share_weights) {
  return std::make_unique<DepthwiseBf16Kernel>(d, ctx, share_weights);
}

}  // namespace ic::cpu
