// The gradients of a pointwise training convolution (1x1, stride 1, one group, NHWC) as matrix
// products. On NHWC activations such a convolution is a matrix product over the pixels, M =
// N*H*W rows: x is [M, Ci], y = dy's shape [M, Co], and the HWIO weights are [Ci, Co]. So
//   dw[Ci, Co] = x^T dy      (x read transposed, in place)
//   dx[M, Ci]  = dy w^T      (w read transposed, converted once a step into the product's format)
//   db[Co]     = the column sums of dy (f32, exact of dy's f32 values)
// oneDNN 2.6's matmul has brgemm kernels for these where its convolution backward has only its
// older JIT ones: on a 2-core AMX Xeon, in bf16 at Inception v3's 1x1 shapes (batch 32), the
// weight gradient ran 1.5-8x and the data gradient up to 4x faster as products (conv_kernel.cc
// says when they are used).
#pragma once

#include <vector>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

class PointwiseGrads {
 public:
  // Whether `d` is such a convolution: 1x1, stride 1, ungrouped (its padding is then none).
  static bool applies(const Conv2dDesc& d);

  // The products for `d` computing in `compute` (x and dy in it; the gradients are f32). Throws
  // dnnl::error when oneDNN has no matmul for them on this CPU.
  PointwiseGrads(const Conv2dDesc& d, dt compute, const dnnl::engine& engine);

  // dy as the products read it: NHWC in the compute type (the arena's dy is f32).
  dnnl::memory::desc dy_desc() const { return dy_md_; }
  // The largest oneDNN scratchpad of the products and the bias reduction.
  size_t scratchpad_bytes() const;
  // Bytes of w^T in the data product's format.
  size_t weights_bytes() const { return data_pd_.weights_desc().get_size(); }

  // Appends the weight gradient into `dw` (HWIO, f32) and, when `db` is not null, the bias
  // gradient from the arena's f32 `dy_f32`. `x` and `dy` are NHWC in the compute type.
  void append_weight_grads(std::vector<DnnlStep>& steps, const dnnl::memory& x,
                           const dnnl::memory& dy, const dnnl::memory& dy_f32, void* dw, void* db,
                           void* scratchpad) const;
  // Appends the conversion of the HWIO weights `w_hwio` (f32) into `w_region` (weights_bytes()),
  // then the data gradient into `dx` (NHWC, f32).
  void append_data_grad(std::vector<DnnlStep>& steps, const dnnl::memory& dy,
                        const dnnl::memory& w_hwio, void* w_region, void* dx,
                        void* scratchpad) const;

 private:
  dnnl::engine engine_;
  dnnl::memory::desc dy_md_;
  dnnl::matmul::primitive_desc weights_pd_, data_pd_;
  dnnl::matmul weights_product_, data_product_;
  dnnl::reduction::primitive_desc bias_pd_;
  dnnl::reduction bias_sum_;
  dnnl::memory::desc x_t_md_, dy_rows_md_, dw_md_, w_t_md_, dx_md_, dy_f32_md_, db_md_;
};

}  // namespace ic::cpu
