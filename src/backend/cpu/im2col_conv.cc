#include "backend/cpu/im2col_conv.h"

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace ic::cpu {
namespace {

using dnnl::memory;

// Bytes of one image's columns: its output pixels times kh*kw*Ci floats.
size_t column_bytes_per_image(const Conv2dDesc& d) {
  const Shape out = d.output();
  return static_cast<size_t>(out.h() * out.w() * d.weight_count() / d.out_channels) * sizeof(float);
}

// A pointwise convolution reads its input as its columns: nothing to copy.
bool reads_input_as_columns(const Conv2dDesc& d) {
  return d.kernel_h == 1 && d.kernel_w == 1 && d.stride_h == 1 && d.stride_w == 1;
}

class Im2colConvKernel final : public OpKernel {
 public:
  Im2colConvKernel(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights)
      : d_(d),
        ctx_(ctx),
        share_weights_(share_weights),
        out_(d.output()),
        pads_(tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h, d.stride_w,
                      d.padding)),
        copies_(!reads_input_as_columns(d)),
        depth_(d.weight_count() / d.out_channels) {
    // One product per image: oneDNN's GEMM splits its rows between threads and may sum a row in
    // another order depending on where the split falls, so a product over several images could
    // give an image other roundings at one place in the batch than at another (a PNG and its
    // own preprocessed array, classified together, differed by 4e-8 in 12 of 25 runs under
    // load).
    const int64_t rows = out_.h() * out_.w();
    const memory::desc columns({rows, depth_}, dt::f32, tag::ab);
    const memory::desc y({rows, d.out_channels}, dt::f32, tag::ab);
    // Changing weights are read where they are (HWIO is the product's plain [depth, Co]);
    // constant ones in whatever layout oneDNN likes best, converted once.
    const memory::desc w({depth_, d.out_channels}, dt::f32,
                         d.constant_weights ? tag::any : tag::ab);
    const memory::desc bias =
        d.has_bias ? memory::desc({1, d.out_channels}, dt::f32, tag::ab) : memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops post;
    append_fused_activation(post, d.fused_relu, d.fused_activation);
    if (post.len() > 0) attr.set_post_ops(post);
    pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(columns, w, bias, y), attr, ctx.engine);
    product_ = dnnl::matmul(pd_);
    plain_weights_md_ = memory::desc({depth_, d.out_channels}, dt::f32, tag::ab);
    scratch_bytes_ = align64(pd_.scratchpad_desc().get_size());
    column_bytes_ = copies_ ? align64(columns.get_size()) : 0;
  }

  size_t workspace_bytes() const override { return scratch_bytes_ + column_bytes_; }
  BackwardReads backward_reads() const override { return {false, false}; }
  std::string implementation() const override {
    const int64_t products = d_.input.n();
    return std::string(copies_ ? "ic:im2col " : "ic:matmul ") + pd_.impl_info_str() + " nhwc" +
           (products > 1 ? " (" + std::to_string(products) + " products)" : "");
  }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("conv2d", b, 1, 1, d_.has_bias ? 2 : 1, 0));
    if (workspace_bytes() > 0 && !b.workspace)
      return error("conv2d: needs ", workspace_bytes(), " bytes of workspace, got none");
    x_ = static_cast<const float*>(b.inputs[0]);
    y_ = static_cast<float*>(b.outputs[0]);
    auto* ws = static_cast<char*>(b.workspace);
    columns_ = reinterpret_cast<float*>(ws + scratch_bytes_);
    try {
      bind_memories(b, ws);
    } catch (const dnnl::error& e) {
      return error("conv2d: binding oneDNN memory: ", e.what());
    }
    return Status();
  }

  void forward(const StepContext&) override {
    conversions_.run(ctx_.stream);
    const int64_t in_image = d_.input.h() * d_.input.w() * d_.input.c();
    const int64_t out_image = out_.h() * out_.w() * out_.c();
    for (int64_t image = 0; image < d_.input.n(); ++image) {
      if (copies_) {
        fill_columns(x_ + image * in_image);
      } else {
        columns_memory_.set_data_handle(const_cast<float*>(x_ + image * in_image));
      }
      y_memory_.set_data_handle(y_ + image * out_image);
      product_.execute(ctx_.stream, args_);
    }
  }
  void backward(const StepContext&) override {}  // forward only (im2col_conv_applies)

 private:
  void bind_memories(const OpBindings& b, char* ws) {
    const dnnl::engine& eng = ctx_.engine;
    conversions_.clear();
    columns_memory_ = memory(pd_.src_desc(), eng, columns_);
    y_memory_ = memory(pd_.dst_desc(), eng, y_);
    memory w(plain_weights_md_, eng, b.params[0]);
    if (pd_.weights_desc() != plain_weights_md_)  // constant: converted at the first forward
      w = conversions_.add(ctx_, w, pd_.weights_desc(), share_weights_);
    args_ = {{DNNL_ARG_SRC, columns_memory_},
             {DNNL_ARG_WEIGHTS, w},
             {DNNL_ARG_DST, y_memory_},
             {DNNL_ARG_SCRATCHPAD, memory(pd_.scratchpad_desc(), eng, ws)}};
    if (d_.has_bias) args_[DNNL_ARG_BIAS] = memory(pd_.bias_desc(), eng, b.params[1]);
  }

  // The columns of one image `x` (NHWC): one row per output pixel, its taps in the weights'
  // (kh, kw, Ci) order, zeros for taps in the padding.
  void fill_columns(const float* x) {
    const int64_t in_h = d_.input.h(), in_w = d_.input.w(), channels = d_.input.c();
    const int64_t out_w = out_.w();
    const size_t tap_bytes = static_cast<size_t>(channels) * sizeof(float);
    parallel_for(out_.h(), 1, [&](int64_t r) {
      float* row = columns_ + r * out_w * depth_;
      for (int64_t q = 0; q < out_w; ++q) {
        float* tap = row + q * depth_;
        for (int a = 0; a < d_.kernel_h; ++a) {
          const int64_t ih = r * d_.stride_h - pads_.top + a;
          for (int c = 0; c < d_.kernel_w; ++c, tap += channels) {
            const int64_t iw = q * d_.stride_w - pads_.left + c;
            if (ih < 0 || ih >= in_h || iw < 0 || iw >= in_w) {
              std::memset(tap, 0, tap_bytes);
            } else {
              std::memcpy(tap, x + (ih * in_w + iw) * channels, tap_bytes);
            }
          }
        }
      }
    });
  }

  Conv2dDesc d_;
  DnnlContext& ctx_;
  bool share_weights_;
  Shape out_;
  Pads pads_;
  bool copies_;    // false: the input is the columns (pointwise)
  int64_t depth_;  // kh * kw * Ci: a column row's length
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul product_;
  memory::desc plain_weights_md_;
  size_t scratch_bytes_ = 0, column_bytes_ = 0;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  float* columns_ = nullptr;
  memory columns_memory_, y_memory_;  // moved along the batch, one image at a time
  std::unordered_map<int, memory> args_;
  WeightConversions conversions_;  // constant weights in the product's layout
};

}  // namespace

bool im2col_conv_applies(const Conv2dDesc& d) {
  return !d.training && !d.int8 && !d.fused_depthwise && d.groups == 1 &&
         d.activations == DType::f32 &&
         (reads_input_as_columns(d) || column_bytes_per_image(d) <= kColumnBytes);
}

std::unique_ptr<OpKernel> make_im2col_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                           bool share_weights) {
  return std::make_unique<Im2colConvKernel>(d, ctx, share_weights);
}

}  // namespace ic::cpu
