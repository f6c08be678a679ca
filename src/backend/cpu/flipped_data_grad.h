// The data gradient of a stride-1 training convolution as a forward convolution. With stride 1,
//   dx[n, i, j, ci] = sum over kh, kw, co of dy[n, i + pt - kh, j + pl - kw, co] w[kh, kw, ci, co]
// is the forward convolution of dy, padded by (KH-1-pt, KW-1-pl) before and (KH-1-pb, KW-1-pr)
// after, with the weights flipped in both spatial axes and their channel axes swapped:
//   w'[kh, kw, co, ci] = w[KH-1-kh, KW-1-kw, ci, co].
// oneDNN 2.6 has brgemm kernels for forward convolutions and only its older JIT ones for backward
// data: on a 2-core AMX Xeon, in bf16 at Inception v3's stride-1 3x3, 5x5, 1x7 and 7x1 shapes
// (batch 32), the forward form ran 1.1-2.8x faster (conv_kernel.cc says when it is used).
#pragma once

#include <vector>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

class FlippedDataGrad {
 public:
  // Whether `d` is such a convolution: stride 1, ungrouped.
  static bool applies(const Conv2dDesc& d);

  // The forward convolution for `d`, reading dy as `dy_md` (NHWC in the compute type) and
  // writing dx as f32 NHWC. Throws dnnl::error when oneDNN has none on this CPU.
  FlippedDataGrad(const Conv2dDesc& d, const dnnl::memory::desc& dy_md, const dnnl::engine& engine);

  size_t scratchpad_bytes() const { return pd_.scratchpad_desc().get_size(); }
  // Workspace for the weights: flipped (f32), then in the convolution's format.
  size_t weights_bytes() const { return align64(flipped_bytes_) + pd_.weights_desc().get_size(); }

  // Binds dy, the HWIO f32 weights at `w_hwio`, the workspace `weights_region`
  // (weights_bytes()), dx (f32 NHWC) and the scratchpad.
  void bind(const dnnl::memory& dy, const void* w_hwio, void* weights_region, void* dx,
            void* scratchpad);
  // Flips the weights, converts them and runs the convolution.
  void run(dnnl::stream& stream);

 private:
  dnnl::engine engine_;
  int taps_ = 0;                   // KH * KW
  size_t tap_floats_ = 0;          // Ci * Co: one tap's weights, contiguous in HWIO
  size_t flipped_bytes_ = 0;       // taps_ * tap_floats_ * 4
  dnnl::memory::desc flipped_md_;  // the flipped f32 weights as the convolution's {Ci, Co, KH, KW}
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward conv_;
  const float* w_hwio_ = nullptr;
  float* flipped_ = nullptr;
  std::vector<DnnlStep> steps_;
};

}  // namespace ic::cpu
