#include "backend/cpu/winograd_products.h"

namespace ic::cpu {

using dnnl::memory;

WinogradProducts::WinogradProducts(int64_t points, int64_t tiles, int64_t in_c, int64_t out_c,
                                   const char* packing, DnnlContext& ctx, bool share_weights)
    : ctx_(ctx), packing_(packing), share_weights_(share_weights) {
  const memory::desc v({points, tiles, in_c}, dt::f32, tag::abc);
  const memory::desc u({points, in_c, out_c}, dt::f32, tag::abc);
  const memory::desc m({points, tiles, out_c}, dt::f32, tag::abc);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(v, u, m), attr, ctx.engine);
  matmul_ = dnnl::matmul(pd_);
  u_bytes_ = u.get_size();
  scratch_bytes_ = align64(pd_.scratchpad_desc().get_size());
  v_bytes_ = align64(v.get_size());
  m_bytes_ = align64(m.get_size());
}

Status WinogradProducts::bind(void* workspace, const void* weights) {
  auto* ws = static_cast<char*>(workspace);
  v_ = reinterpret_cast<float*>(ws + scratch_bytes_);
  m_ = reinterpret_cast<float*>(ws + scratch_bytes_ + v_bytes_);
  u_ = converted_weights(ctx_, weights, {}, packing_, u_bytes_, share_weights_);
  try {
    const dnnl::engine& eng = ctx_.engine;
    args_ = {{DNNL_ARG_SRC, memory(pd_.src_desc(), eng, v_)},
             {DNNL_ARG_WEIGHTS, memory(pd_.weights_desc(), eng, u_->data.get())},
             {DNNL_ARG_DST, memory(pd_.dst_desc(), eng, m_)},
             {DNNL_ARG_SCRATCHPAD, memory(pd_.scratchpad_desc(), eng, ws)}};
  } catch (const dnnl::error& e) {
    return error("conv2d: binding oneDNN memory: ", e.what());
  }
  return Status();
}

}  // namespace ic::cpu
