#include "backend/cpu/flipped_data_grad.h"

#include <cstring>

namespace ic::cpu {

using dnnl::memory;

bool FlippedDataGrad::applies(const Conv2dDesc& d) {
  return d.stride_h == 1 && d.stride_w == 1 && d.groups == 1;
}

FlippedDataGrad::FlippedDataGrad(const Conv2dDesc& d, const memory::desc& dy_md,
                                 const dnnl::engine& engine)
    : engine_(engine) {
  const Pads p = tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, 1, 1, d.padding);
  const memory::dim ci = d.input.c(), co = d.out_channels, kh = d.kernel_h, kw = d.kernel_w;
  taps_ = d.kernel_h * d.kernel_w;
  tap_floats_ = static_cast<size_t>(ci * co);
  flipped_bytes_ = static_cast<size_t>(taps_) * tap_floats_ * sizeof(float);
  // Output channel ci, input channel co, tap (kh, kw) of the flipped HWIO array [KH][KW][Ci][Co].
  flipped_md_ = memory::desc({ci, co, kh, kw}, dt::f32, memory::dims{co, 1, kw * ci * co, ci * co});
  const memory::desc w_any({ci, co, kh, kw}, dy_md.data_type(), memory::format_tag::any);
  const memory::desc dx = nhwc_md(d.input);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  pd_ = dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, dy_md, w_any, dx,
          {1, 1}, {kh - 1 - p.top, kw - 1 - p.left}, {kh - 1 - p.bottom, kw - 1 - p.right}),
      attr, engine);
  conv_ = dnnl::convolution_forward(pd_);
}

void FlippedDataGrad::bind(const memory& dy, const void* w_hwio, void* weights_region, void* dx,
                           void* scratchpad) {
  w_hwio_ = static_cast<const float*>(w_hwio);
  flipped_ = static_cast<float*>(weights_region);
  const memory flipped(flipped_md_, engine_, flipped_);
  const memory w(pd_.weights_desc(), engine_,
                 static_cast<char*>(weights_region) + align64(flipped_bytes_));
  steps_.clear();
  steps_.push_back(reorder_step(flipped, w));
  steps_.push_back({conv_,
                    {{DNNL_ARG_SRC, dy},
                     {DNNL_ARG_WEIGHTS, w},
                     {DNNL_ARG_DST, memory(pd_.dst_desc(), engine_, dx)},
                     {DNNL_ARG_SCRATCHPAD, memory(pd_.scratchpad_desc(), engine_, scratchpad)}}});
}

void FlippedDataGrad::run(dnnl::stream& stream) {
  // Each tap's [Ci][Co] block is contiguous in HWIO: flipping is one copy per tap; the channel
  // swap is in flipped_md_'s strides, done by the reorder.
  for (int tap = 0; tap < taps_; ++tap)
    std::memcpy(flipped_ + static_cast<size_t>(taps_ - 1 - tap) * tap_floats_,
                w_hwio_ + static_cast<size_t>(tap) * tap_floats_, tap_floats_ * sizeof(float));
  run_steps(steps_, stream);
}

}  // namespace ic::cpu
