// The middle of a Winograd convolution, between its transforms: one matrix product
// [tiles, Ci] x [Ci, Co] per point of the transformed tile, all in one oneDNN batched matmul
//   m[p] = v[p] u[p],   v [points][tiles][Ci] (the transformed input),
//                       u [points][Ci][Co]    (the transformed weights),
//                       m [points][tiles][Co] (the products, for the output transform),
// with v, m and the matmul's scratchpad in the kernel's workspace, and u kept as the backend's
// shared converted weights (one copy for the graphs of every batch size), filled once.
// Used by winograd_conv.h's F(2x2,3x3) and winograd_toom_cook_conv.h's F(m,r).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

class WinogradProducts {
 public:
  // packing: the name of u's layout among the converted weights (a string literal).
  // share_weights: false for a kernel timed on scratch buffers. Throws dnnl::error where oneDNN
  // has no such matmul here.
  WinogradProducts(int64_t points, int64_t tiles, int64_t in_c, int64_t out_c, const char* packing,
                   DnnlContext& ctx, bool share_weights);

  // The bytes of workspace bind wants: the scratchpad, v and m.
  size_t workspace_bytes() const { return scratch_bytes_ + v_bytes_ + m_bytes_; }
  // oneDNN's name for its matmul.
  std::string matmul_name() const { return pd_.impl_info_str(); }

  // Lays v and m out in `workspace` and finds (or makes) u for the weights at `weights`.
  Status bind(void* workspace, const void* weights);

  float* v() const { return v_; }
  float* m() const { return m_; }

  // A forward over `images` images: at the first one (of any kernel sharing u), fill_weights(u);
  // then for each image, input(image) writes v, the products m = v u, and output(image) reads m.
  template <typename FillWeights, typename Input, typename Output>
  void forward(int64_t images, FillWeights fill_weights, Input input, Output output) {
    if (!u_->ready) {
      fill_weights(static_cast<float*>(u_->data.get()));
      u_->ready = true;
    }
    for (int64_t image = 0; image < images; ++image) {
      input(image);
      matmul_.execute(ctx_.stream, args_);
      output(image);
    }
  }

 private:
  DnnlContext& ctx_;
  const char* packing_;
  bool share_weights_;
  size_t u_bytes_ = 0, scratch_bytes_ = 0, v_bytes_ = 0, m_bytes_ = 0;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul matmul_;
  float* v_ = nullptr;
  float* m_ = nullptr;
  std::shared_ptr<ConvertedWeights> u_;
  std::unordered_map<int, dnnl::memory> args_;
};

}  // namespace ic::cpu
