#include "backend/cpu/winograd_conv.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/channel_loops.h"
#include "backend/cpu/winograd_kernel.h"

namespace ic::cpu {
namespace {

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

class WinogradConvKernel final : public WinogradKernel {
 public:
  WinogradConvKernel(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights)
      : WinogradKernel(d, ctx, share_weights, 2, 2, 16, kTransformed, 0) {}

  std::string implementation() const override {
    return std::string("ic:winograd F(2x2,3x3) ") + products_.matmul_name() + " nhwc";
  }

 private:
  // The name of the transformed weights' layout in the backend's shared converted weights.
  static constexpr const char* kTransformed = "ic:winograd F(2x2,3x3) [16][Ci][Co]";

  void transform_weights(const float* w, float* u) const override {
    weight_transform(w, d_.input.c(), d_.out_channels, u);
  }

  void transform_input(const float* x) override {
    const int64_t channels = d_.input.c();
    parallel_for(tiles_.rows, 1, [&](int64_t tile_row) {
      for (int64_t tile_col = 0; tile_col < tiles_.cols; ++tile_col) {
        const float* rows[4][4];
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b)
            rows[a][b] =
                input_pixel(x, 2 * tile_row - pads_.top + a, 2 * tile_col - pads_.left + b);
        float* v[16];
        const int64_t tile = tile_row * tiles_.cols + tile_col;
        for (int k = 0; k < 16; ++k) v[k] = plane(products_.v(), k, tile, channels);
        input_transform(rows, channels, v);
      }
    });
  }

  void transform_output(float* y) override {
    const int64_t channels = d_.out_channels;
    parallel_for(tiles_.rows, 1, [&](int64_t tile_row) {
      for (int64_t tile_col = 0; tile_col < tiles_.cols; ++tile_col) {
        const float* m[16];
        const int64_t tile = tile_row * tiles_.cols + tile_col;
        for (int k = 0; k < 16; ++k) m[k] = plane(products_.m(), k, tile, channels);
        float* out[2][2];
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j)
            out[i][j] = output_pixel(y, 2 * tile_row + i, 2 * tile_col + j, tile_row);
        output_transform(m, bias(), relu_floor(), channels, out);
      }
    });
  }
};

}  // namespace

bool winograd_conv_applies(const Conv2dDesc& d) {
  return d.kernel_h == 3 && d.kernel_w == 3 && winograd_takes(d, 16, winograd_tiles(d, 2, 2));
}

std::unique_ptr<OpKernel> make_winograd_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                             bool share_weights) {
  return std::make_unique<WinogradConvKernel>(d, ctx, share_weights);
}

}  // namespace ic::cpu
