#include "backend/cpu/pointwise_grads.h"

#include <algorithm>

namespace ic::cpu {
namespace {

using dnnl::memory;

// A row-major [rows, cols] matrix of `type`, read transposed when `transposed`: then its
// elements are at column-major offsets of the matrix it is the transpose of.
memory::desc matrix(memory::dim rows, memory::dim cols, dt type, bool transposed = false) {
  return transposed ? memory::desc({rows, cols}, type, memory::dims{1, rows})
                    : memory::desc({rows, cols}, type, memory::dims{cols, 1});
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace

bool PointwiseGrads::applies(const Conv2dDesc& d) {
  return d.kernel_h == 1 && d.kernel_w == 1 && d.stride_h == 1 && d.stride_w == 1 && d.groups == 1;
}

PointwiseGrads::PointwiseGrads(const Conv2dDesc& d, dt compute, const dnnl::engine& engine)
    : engine_(engine) {
  const memory::dim rows = d.input.n() * d.input.h() * d.input.w();
  const memory::dim ci = d.input.c(), co = d.out_channels;
  dy_md_ = nhwc_md(d.output(), compute);
  x_t_md_ = matrix(ci, rows, compute, true);  // x [rows, Ci] read as [Ci, rows]
  dy_rows_md_ = matrix(rows, co, compute);
  dw_md_ = matrix(ci, co, dt::f32);         // HWIO with H = W = 1
  w_t_md_ = matrix(co, ci, dt::f32, true);  // the f32 [Ci, Co] weights read as [Co, Ci]
  dx_md_ = matrix(rows, ci, dt::f32);
  dy_f32_md_ = matrix(rows, co, dt::f32);
  db_md_ = matrix(1, co, dt::f32);
  const dnnl::primitive_attr attr = user_scratchpad();
  weights_pd_ =
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(x_t_md_, dy_rows_md_, dw_md_), attr, engine);
  // The weights in whatever blocked format the product reads fastest (converted each step).
  const memory::desc w_any({co, ci}, compute, memory::format_tag::any);
  data_pd_ =
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(dy_rows_md_, w_any, dx_md_), attr, engine);
  weights_product_ = dnnl::matmul(weights_pd_);
  data_product_ = dnnl::matmul(data_pd_);
  if (d.has_bias) {
    bias_pd_ = dnnl::reduction::primitive_desc(
        dnnl::reduction::desc(dnnl::algorithm::reduction_sum, dy_f32_md_, db_md_, 0.f, 0.f), attr,
        engine);
    bias_sum_ = dnnl::reduction(bias_pd_);
  }
}

size_t PointwiseGrads::scratchpad_bytes() const {
  size_t bytes =
      std::max(weights_pd_.scratchpad_desc().get_size(), data_pd_.scratchpad_desc().get_size());
  if (bias_sum_) bytes = std::max(bytes, bias_pd_.scratchpad_desc().get_size());
  return bytes;
}

void PointwiseGrads::append_weight_grads(std::vector<DnnlStep>& steps, const memory& x,
                                         const memory& dy, const memory& dy_f32, void* dw, void* db,
                                         void* scratchpad) const {
  steps.push_back(
      {weights_product_,
       {{DNNL_ARG_SRC, memory(x_t_md_, engine_, x.get_data_handle())},
        {DNNL_ARG_WEIGHTS, memory(dy_rows_md_, engine_, dy.get_data_handle())},
        {DNNL_ARG_DST, memory(dw_md_, engine_, dw)},
        {DNNL_ARG_SCRATCHPAD, memory(weights_pd_.scratchpad_desc(), engine_, scratchpad)}}});
  if (db == nullptr) return;
  steps.push_back(
      {bias_sum_,
       {{DNNL_ARG_SRC, memory(dy_f32_md_, engine_, dy_f32.get_data_handle())},
        {DNNL_ARG_DST, memory(db_md_, engine_, db)},
        {DNNL_ARG_SCRATCHPAD, memory(bias_pd_.scratchpad_desc(), engine_, scratchpad)}}});
}

void PointwiseGrads::append_data_grad(std::vector<DnnlStep>& steps, const memory& dy,
                                      const memory& w_hwio, void* w_region, void* dx,
                                      void* scratchpad) const {
  const memory w_t(w_t_md_, engine_, w_hwio.get_data_handle());
  const memory w(data_pd_.weights_desc(), engine_, w_region);
  steps.push_back(reorder_step(w_t, w));
  steps.push_back(
      {data_product_,
       {{DNNL_ARG_SRC, memory(dy_rows_md_, engine_, dy.get_data_handle())},
        {DNNL_ARG_WEIGHTS, w},
        {DNNL_ARG_DST, memory(dx_md_, engine_, dx)},
        {DNNL_ARG_SCRATCHPAD, memory(data_pd_.scratchpad_desc(), engine_, scratchpad)}}});
}

}  // namespace ic::cpu
