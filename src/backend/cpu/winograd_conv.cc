#include "backend/cpu/winograd_conv.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/channel_loops.h"
#include "backend/cpu/winograd_products.h"

namespace ic::cpu {
namespace {

constexpr size_t kTileBytes = size_t{64} << 20;  // one image's transformed input and products

struct Tiles {
  int64_t rows, cols;
  int64_t count() const { return rows * cols; }
};

Tiles tiles_of(const Conv2dDesc& d) {
  const Shape out = d.output();
  return {(out.h() + 1) / 2, (out.w() + 1) / 2};
}

size_t tile_bytes(const Conv2dDesc& d) {
  return static_cast<size_t>(16 * tiles_of(d).count() * (d.input.c() + d.out_channels)) *
         sizeof(float);
}

// B^T x B of one 4x4 input tile, channel by channel: x[a][b] is the tile's row a, column b (the
// zeros where it lies in the padding); v[k] (k = 4a + b) the transformed value's plane.
IC_CHANNEL_LOOP void input_transform(const float* const x[4][4], int64_t channels,
                                     float* const v[16]) {
  // The planes written never overlap the pixels read: no dependence between channels.
  IC_INDEPENDENT_ITERATIONS
  for (int64_t c = 0; c < channels; ++c) {
    float r[4][4];
    for (int b = 0; b < 4; ++b) {
      r[0][b] = x[0][b][c] - x[2][b][c];
      r[1][b] = x[1][b][c] + x[2][b][c];
      r[2][b] = x[2][b][c] - x[1][b][c];
      r[3][b] = x[1][b][c] - x[3][b][c];
    }
    for (int a = 0; a < 4; ++a) {
      v[4 * a + 0][c] = r[a][0] - r[a][2];
      v[4 * a + 1][c] = r[a][1] + r[a][2];
      v[4 * a + 2][c] = r[a][2] - r[a][1];
      v[4 * a + 3][c] = r[a][1] - r[a][3];
    }
  }
}

// A^T m A of one tile's 16 products, plus the bias, then max(., floor): y[i][j] gets output
// pixel (i, j) of the tile. floor is 0 for a fused ReLU, else -inf (no branch in the loop).
IC_CHANNEL_LOOP void output_transform(const float* const m[16], const float* bias, float floor,
                                      int64_t channels, float* const y[2][2]) {
  // The output pixels written never overlap the products read.
  IC_INDEPENDENT_ITERATIONS
  for (int64_t c = 0; c < channels; ++c) {
    float s[2][4];
    for (int b = 0; b < 4; ++b) {
      s[0][b] = m[b][c] + m[4 + b][c] + m[8 + b][c];
      s[1][b] = m[4 + b][c] - m[8 + b][c] - m[12 + b][c];
    }
    for (int i = 0; i < 2; ++i) {
      y[i][0][c] = std::max(s[i][0] + s[i][1] + s[i][2] + bias[c], floor);
      y[i][1][c] = std::max(s[i][1] - s[i][2] - s[i][3] + bias[c], floor);
    }
  }
}

// G w G^T of every (ci, co) pair: w is HWIO [3,3,Ci,Co], u [16][Ci][Co].
void weight_transform(const float* w, int64_t in_c, int64_t out_c, float* u) {
  parallel_for(in_c, 1, [&](int64_t ci) {
    for (int64_t co = 0; co < out_c; ++co) {
      float g[3][3], rows[4][3];
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) g[a][b] = w[((a * 3 + b) * in_c + ci) * out_c + co];
      for (int b = 0; b < 3; ++b) {
        rows[0][b] = g[0][b];
        rows[1][b] = 0.5f * (g[0][b] + g[1][b] + g[2][b]);
        rows[2][b] = 0.5f * (g[0][b] - g[1][b] + g[2][b]);
        rows[3][b] = g[2][b];
      }
      for (int a = 0; a < 4; ++a) {
        const float t[4] = {rows[a][0], 0.5f * (rows[a][0] + rows[a][1] + rows[a][2]),
                            0.5f * (rows[a][0] - rows[a][1] + rows[a][2]), rows[a][2]};
        for (int b = 0; b < 4; ++b) u[((4 * a + b) * in_c + ci) * out_c + co] = t[b];
      }
    }
  });
}

class WinogradConvKernel final : public OpKernel {
 public:
  WinogradConvKernel(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights)
      : d_(d),
        out_(d.output()),
        pads_(tf_pads(d.input.h(), d.input.w(), 3, 3, 1, 1, d.padding)),
        tiles_(tiles_of(d)),
        zeros_(static_cast<size_t>(std::max(d.input.c(), d.out_channels)), 0.f),
        products_(16, tiles_.count(), d.input.c(), d.out_channels, kTransformed, ctx,
                  share_weights),
        discard_bytes_(align64(static_cast<size_t>(tiles_.rows * d.out_channels) * sizeof(float))) {
  }

  size_t workspace_bytes() const override { return products_.workspace_bytes() + discard_bytes_; }
  BackwardReads backward_reads() const override { return {false, false}; }
  std::string implementation() const override {
    return std::string("ic:winograd F(2x2,3x3) ") + products_.matmul_name() + " nhwc";
  }

  Status bind(const OpBindings& b) override {
    IC_RETURN_IF_ERROR(check_bindings("conv2d", b, 1, 1, d_.has_bias ? 2 : 1, 0));
    if (!b.workspace)
      return error("conv2d: needs ", workspace_bytes(), " bytes of workspace, got none");
    x_ = static_cast<const float*>(b.inputs[0]);
    y_ = static_cast<float*>(b.outputs[0]);
    weights_ = static_cast<const float*>(b.params[0]);
    bias_ = d_.has_bias ? static_cast<const float*>(b.params[1]) : zeros_.data();
    discard_ =
        reinterpret_cast<float*>(static_cast<char*>(b.workspace) + products_.workspace_bytes());
    return products_.bind(b.workspace, weights_);
  }

  void forward(const StepContext&) override {
    const int64_t in_image = d_.input.h() * d_.input.w() * d_.input.c();
    const int64_t out_image = out_.h() * out_.w() * out_.c();
    products_.forward(
        d_.input.n(),
        [&](float* u) { weight_transform(weights_, d_.input.c(), d_.out_channels, u); },
        [&](int64_t image) { transform_input(x_ + image * in_image); },
        [&](int64_t image) { transform_output(y_ + image * out_image); });
  }
  void backward(const StepContext&) override {}  // forward only (winograd_conv_applies)

 private:
  // The name of the transformed weights' layout in the backend's shared converted weights.
  static constexpr const char* kTransformed = "ic:winograd F(2x2,3x3) [16][Ci][Co]";

  void transform_input(const float* x) {
    const int64_t in_h = d_.input.h(), in_w = d_.input.w(), channels = d_.input.c();
    const int64_t plane = tiles_.count() * channels;
    parallel_for(tiles_.rows, 1, [&](int64_t tile_row) {
      for (int64_t tile_col = 0; tile_col < tiles_.cols; ++tile_col) {
        const float* rows[4][4];
        for (int a = 0; a < 4; ++a) {
          const int64_t ih = 2 * tile_row - pads_.top + a;
          for (int b = 0; b < 4; ++b) {
            const int64_t iw = 2 * tile_col - pads_.left + b;
            const bool inside = ih >= 0 && ih < in_h && iw >= 0 && iw < in_w;
            rows[a][b] = inside ? x + (ih * in_w + iw) * channels : zeros_.data();
          }
        }
        float* v[16];
        const int64_t tile = tile_row * tiles_.cols + tile_col;
        for (int k = 0; k < 16; ++k) v[k] = products_.v() + k * plane + tile * channels;
        input_transform(rows, channels, v);
      }
    });
  }

  void transform_output(float* y) {
    const int64_t channels = d_.out_channels;
    const int64_t plane = tiles_.count() * channels;
    const float floor = d_.fused_relu ? 0.f : -std::numeric_limits<float>::infinity();
    parallel_for(tiles_.rows, 1, [&](int64_t tile_row) {
      // Where a tile's second row or column falls past the output (odd sizes): the row's own
      // slice of the workspace, so that threads never share it.
      float* discard = discard_ + tile_row * channels;
      for (int64_t tile_col = 0; tile_col < tiles_.cols; ++tile_col) {
        const float* m[16];
        const int64_t tile = tile_row * tiles_.cols + tile_col;
        for (int k = 0; k < 16; ++k) m[k] = products_.m() + k * plane + tile * channels;
        float* out[2][2];
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) {
            const int64_t oh = 2 * tile_row + i, ow = 2 * tile_col + j;
            out[i][j] =
                oh < out_.h() && ow < out_.w() ? y + (oh * out_.w() + ow) * channels : discard;
          }
        output_transform(m, bias_, floor, channels, out);
      }
    });
  }

  Conv2dDesc d_;
  Shape out_;
  Pads pads_;
  Tiles tiles_;
  std::vector<float> zeros_;  // the padding's input pixels, and the bias where there is none
  WinogradProducts products_;
  size_t discard_bytes_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  const float* weights_ = nullptr;
  const float* bias_ = nullptr;
  float* discard_ = nullptr;  // [tile rows][Co]: outputs past the edge
};

}  // namespace

bool winograd_conv_applies(const Conv2dDesc& d) {
  return !d.training && !d.int8 && !d.fused_depthwise && !d.fused_activation && d.groups == 1 &&
         d.activations == DType::f32 && d.constant_weights && d.kernel_h == 3 && d.kernel_w == 3 &&
         d.stride_h == 1 && d.stride_w == 1 && tile_bytes(d) <= kTileBytes;
}

std::unique_ptr<OpKernel> make_winograd_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                             bool share_weights) {
  return std::make_unique<WinogradConvKernel>(d, ctx, share_weights);
}

}  // namespace ic::cpu
