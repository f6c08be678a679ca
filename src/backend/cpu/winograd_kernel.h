// What the Winograd convolutions (winograd_conv.h's F(2x2,3x3), winograd_toom_cook_conv.h's
// F(2,7), F(4,3) and F(4x4,3x3)) share around their transforms:
//   - which descs any of them takes (winograd_takes), and an image's tiles of outputs;
//   - WinogradProducts, the middle: one matrix product [tiles, Ci] x [Ci, Co] per point of the
//     transformed tile, all in one oneDNN batched matmul
//       m[p] = v[p] u[p],   v [points][tiles][Ci] (the transformed input),
//                           u [points][Ci][Co]    (the transformed weights),
//                           m [points][tiles][Co] (the products, for the output transform),
//     with v, m and the matmul's scratchpad in the kernel's workspace, and u kept as the
//     backend's shared converted weights (one copy for the graphs of every batch size);
//   - WinogradKernel, the OpKernel: bindings, the workspace, the padding's zeros, the slice
//     where outputs past the edge go, and the forward over the images. A subclass supplies the
//     weights' transform and an image's input and output transforms.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cpu/cpu_common.h"

namespace ic::cpu {

// An image's tiles, `rows` x `cols`, each `tile_h` x `tile_w` outputs (the last row and column
// may reach past the output).
struct WinogradTiles {
  int64_t rows, cols;
  int64_t count() const { return rows * cols; }
};
WinogradTiles winograd_tiles(const Conv2dDesc& d, int tile_h, int tile_w);

// Whether a Winograd kernel of `points` points a tile and `tiles` tiles an image may take `d`
// (its kernel shape aside): forward only, not int8, one group, float32 activations, constant
// weights, stride 1, no activation but a fused ReLU, and one image's transformed input and
// products within 64 MiB.
bool winograd_takes(const Conv2dDesc& d, int64_t points, const WinogradTiles& tiles);

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
  // fill(u), unless u is filled already (by this kernel or another one sharing it).
  template <typename Fill>
  void fill_weights_once(Fill fill) {
    if (u_->ready) return;
    fill(static_cast<float*>(u_->data.get()));
    u_->ready = true;
  }

  // m = v u.
  void run() { matmul_.execute(ctx_.stream, args_); }

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

class WinogradKernel : public OpKernel {
 public:
  // Tiles of tile_h x tile_w outputs, `points` points each; temp_bytes: a workspace slice of
  // that size per tile row for the subclass's transforms (temp()).
  WinogradKernel(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights, int tile_h, int tile_w,
                 int64_t points, const char* packing, size_t temp_bytes);

  size_t workspace_bytes() const override;
  BackwardReads backward_reads() const override { return {false, false}; }
  Status bind(const OpBindings& b) override;
  // At the first forward of any kernel sharing the transformed weights, transform_weights;
  // then for each image its input transform, the products and its output transform.
  void forward(const StepContext&) override;
  void backward(const StepContext&) override {}  // forward only (winograd_takes)

 protected:
  // u from the bound weights (HWIO [kh, kw, Ci, Co]): u [points][Ci][Co].
  virtual void transform_weights(const float* w, float* u) const = 0;
  // One image's x (NHWC) into products().v(), and products().m() into its y.
  virtual void transform_input(const float* x) = 0;
  virtual void transform_output(float* y) = 0;

  // The input pixel (ih, iw) of image `x`, or zeros where it lies in the padding.
  const float* input_pixel(const float* x, int64_t ih, int64_t iw) const;
  // The output pixel (oh, ow) of image `y`, or tile row `row`'s own discard slice where it lies
  // past the output (threads never share it).
  float* output_pixel(float* y, int64_t oh, int64_t ow, int64_t row) const;
  // Plane `point` of v or m (`base`) at tile `tile`, for `channels` channels.
  float* plane(float* base, int64_t point, int64_t tile, int64_t channels) const {
    return base + (point * tiles_.count() + tile) * channels;
  }
  // Tile row `row`'s slice of temp_bytes.
  float* temp(int64_t row) const {
    return reinterpret_cast<float*>(reinterpret_cast<char*>(temp_) + row * temp_bytes_);
  }
  // The bias, or zeros where there is none; zeros of max(Ci, Co) channels.
  const float* bias() const { return bias_; }
  const float* zeros() const { return zeros_.data(); }
  // max(., floor) after the bias: 0 for a fused ReLU, else -inf (no branch in the loops).
  float relu_floor() const;

  const Conv2dDesc d_;
  const Shape out_;
  const Pads pads_;
  const WinogradTiles tiles_;
  WinogradProducts products_;

 private:
  std::vector<float> zeros_;
  size_t discard_bytes_, temp_bytes_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  const float* weights_ = nullptr;
  const float* bias_ = nullptr;
  float* discard_ = nullptr;  // [tile rows][Co]: outputs past the edge
  void* temp_ = nullptr;      // [tile rows][temp_bytes_]
};

}  // namespace ic::cpu
