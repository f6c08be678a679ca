#include "backend/cpu/winograd_kernel.h"

#include <algorithm>
#include <limits>

namespace ic::cpu {

using dnnl::memory;

namespace {
constexpr size_t kTileBytes = size_t{64} << 20;  // one image's transformed input and products
}  // namespace

WinogradTiles winograd_tiles(const Conv2dDesc& d, int tile_h, int tile_w) {
  const Shape out = d.output();
  return {(out.h() + tile_h - 1) / tile_h, (out.w() + tile_w - 1) / tile_w};
}

bool winograd_takes(const Conv2dDesc& d, int64_t points, const WinogradTiles& tiles) {
  if (d.training || d.int8 || d.fused_depthwise || d.fused_activation || d.groups != 1 ||
      d.activations != DType::f32 || !d.constant_weights || d.stride_h != 1 || d.stride_w != 1)
    return false;
  const auto bytes =
      static_cast<size_t>(points * tiles.count() * (d.input.c() + d.out_channels)) * sizeof(float);
  return bytes <= kTileBytes;
}

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

WinogradKernel::WinogradKernel(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights,
                               int tile_h, int tile_w, int64_t points, const char* packing,
                               size_t temp_bytes)
    : d_(d),
      out_(d.output()),
      pads_(tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, 1, 1, d.padding)),
      tiles_(winograd_tiles(d, tile_h, tile_w)),
      products_(points, tiles_.count(), d.input.c(), d.out_channels, packing, ctx, share_weights),
      zeros_(static_cast<size_t>(std::max(d.input.c(), d.out_channels)), 0.f),
      discard_bytes_(align64(static_cast<size_t>(tiles_.rows * d.out_channels) * sizeof(float))),
      temp_bytes_(align64(temp_bytes)) {}

size_t WinogradKernel::workspace_bytes() const {
  return products_.workspace_bytes() + discard_bytes_ +
         static_cast<size_t>(tiles_.rows) * temp_bytes_;
}

Status WinogradKernel::bind(const OpBindings& b) {
  IC_RETURN_IF_ERROR(check_bindings("conv2d", b, 1, 1, d_.has_bias ? 2 : 1, 0));
  if (!b.workspace)
    return error("conv2d: needs ", workspace_bytes(), " bytes of workspace, got none");
  x_ = static_cast<const float*>(b.inputs[0]);
  y_ = static_cast<float*>(b.outputs[0]);
  weights_ = static_cast<const float*>(b.params[0]);
  bias_ = d_.has_bias ? static_cast<const float*>(b.params[1]) : zeros_.data();
  char* after_products = static_cast<char*>(b.workspace) + products_.workspace_bytes();
  discard_ = reinterpret_cast<float*>(after_products);
  temp_ = after_products + discard_bytes_;
  return products_.bind(b.workspace, weights_);
}

void WinogradKernel::forward(const StepContext&) {
  products_.fill_weights_once([&](float* u) { transform_weights(weights_, u); });
  const int64_t in_image = d_.input.h() * d_.input.w() * d_.input.c();
  const int64_t out_image = out_.h() * out_.w() * out_.c();
  for (int64_t image = 0; image < d_.input.n(); ++image) {
    transform_input(x_ + image * in_image);
    products_.run();
    transform_output(y_ + image * out_image);
  }
}

const float* WinogradKernel::input_pixel(const float* x, int64_t ih, int64_t iw) const {
  const bool inside = ih >= 0 && ih < d_.input.h() && iw >= 0 && iw < d_.input.w();
  return inside ? x + (ih * d_.input.w() + iw) * d_.input.c() : zeros_.data();
}

float* WinogradKernel::output_pixel(float* y, int64_t oh, int64_t ow, int64_t row) const {
  const bool inside = oh < out_.h() && ow < out_.w();
  return inside ? y + (oh * out_.w() + ow) * out_.c() : discard_ + row * out_.c();
}

float WinogradKernel::relu_floor() const {
  return d_.fused_relu ? 0.f : -std::numeric_limits<float>::infinity();
}

}  // namespace ic::cpu
