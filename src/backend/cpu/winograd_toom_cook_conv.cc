#include "backend/cpu/winograd_toom_cook_conv.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/channel_loops.h"
#include "backend/cpu/winograd_kernel.h"

namespace ic::cpu {
namespace {

// How a kernel shape is tiled: `outputs_h` x `outputs_w` outputs per tile (1 along an axis the
// kernel does not span), the name in implementation(), the name of the transformed weights'
// layout among the converted weights, and the fewest tiles an image must have. At most 8 points
// an axis: a ninth would be +-3 or +-1/4, whose transforms round too much in float32.
//
// F(4x4,3x3)'s transformed weights are 4x the weights (36 points for 9 taps), read once an image:
// on small maps that read costs more than the products save. Timed alone on warm caches it
// still looks faster, so the rule is fixed: on a 2-core Zen 2, ResNet-50's 3x3 256->256 layers
// on 14x14 (16 tiles) took 2.2 ms in the network against 0.95 with F(2x2,3x3), its 28x28 ones
// (49 tiles) 1.0 against 0.9, and its 56x56 ones (196 tiles) 1.0 against 1.1.
struct ToomCookTiling {
  int kernel_h, kernel_w, outputs_h, outputs_w;
  const char* name;     // in implementation()
  const char* packing;  // ConvertedWeights::packing
  int64_t min_tiles;
};
constexpr ToomCookTiling kToomCookTilings[] = {
    {1, 7, 1, 2, "F(2,7) along w", "ic:winograd F(2,7) [8][Ci][Co]", 1},
    {7, 1, 2, 1, "F(2,7) along h", "ic:winograd F(2,7) [8][Ci][Co]", 1},
    {1, 3, 1, 4, "F(4,3) along w", "ic:winograd F(4,3) [6][Ci][Co]", 1},
    {3, 1, 4, 1, "F(4,3) along h", "ic:winograd F(4,3) [6][Ci][Co]", 1},
    {3, 3, 4, 4, "F(4x4,3x3)", "ic:winograd F(4x4,3x3) [36][Ci][Co]", 64},
};

const ToomCookTiling* tiling_of(const Conv2dDesc& d) {
  for (const ToomCookTiling& tiling : kToomCookTilings)
    if (tiling.kernel_h == d.kernel_h && tiling.kernel_w == d.kernel_w) return &tiling;
  return nullptr;
}

// The finite interpolation points for n points in all (infinity is always the last one). Six
// take 1/2 in place of 2: F(4x4,3x3)'s outputs then rounded 1.6x less in a float32 simulation
// (1.7e-6 of the largest output on average over 128 channels, against 2.9e-6 with +-2).
constexpr double kSixPoints[] = {0, 1, -1, 0.5, -2};
constexpr double kEightPoints[] = {0, 1, -1, 2, -2, 0.5, -0.5};

// The value at point `point` of n (the last is infinity) of the polynomial whose `terms`
// coefficients a row of these multiplies: the point's powers, or at infinity the leading
// coefficient alone.
double power(int point, int n, int k, int terms) {
  if (point == n - 1) return k == terms - 1 ? 1.0 : 0.0;
  return std::pow(n == 6 ? kSixPoints[point] : kEightPoints[point], k);
}

// The inverse of the n x n row-major matrix `a`, by Gauss-Jordan elimination with partial
// pivoting (a Vandermonde matrix of distinct points here: never singular).
std::vector<double> inverse(std::vector<double> a, int n) {
  std::vector<double> inv(static_cast<size_t>(n * n), 0.0);
  for (int i = 0; i < n; ++i) inv[i * n + i] = 1;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int row = col + 1; row < n; ++row)
      if (std::abs(a[row * n + col]) > std::abs(a[pivot * n + col])) pivot = row;
    for (int k = 0; k < n; ++k) {
      std::swap(a[col * n + k], a[pivot * n + k]);
      std::swap(inv[col * n + k], inv[pivot * n + k]);
    }
    const double scale = 1 / a[col * n + col];
    for (int k = 0; k < n; ++k) {
      a[col * n + k] *= scale;
      inv[col * n + k] *= scale;
    }
    for (int row = 0; row < n; ++row) {
      const double factor = a[row * n + col];
      if (row == col || factor == 0) continue;
      for (int k = 0; k < n; ++k) {
        a[row * n + k] -= factor * a[col * n + k];
        inv[row * n + k] -= factor * inv[col * n + k];
      }
    }
  }
  return inv;
}

// Toom-Cook's matrices for F(m, r) on n = m + r - 1 points (for m = r = 1, an axis the kernel
// does not span: n = 1 and every matrix [[1]]). The product s = g * h of two
// polynomials of r and m coefficients is s = C [(G g) .* (A h)]: G and A evaluate g and h at the
// points, C = V^-1 interpolates s from its values (V evaluates n coefficients). The correlation
// y_i = sum_k g_k x_(i+k) is the transpose of h -> s for a fixed g, so
// y = A^T [(G g) .* (C^T x)], and B^T = C^T.
struct AxisTransforms {
  int m, r, n;
  std::vector<float> bt;  // [n][n]: v = B^T x, x a tile's n input pixels
  std::vector<double> g;  // [n][r]: u = G w, w the kernel's r taps (applied in double, once)
  std::vector<float> at;  // [m][n]: y = A^T (u .* v)
};

AxisTransforms axis_transforms(int m, int r) {
  const int n = m + r - 1;
  std::vector<double> v(static_cast<size_t>(n * n));
  for (int q = 0; q < n; ++q)
    for (int k = 0; k < n; ++k) v[q * n + k] = power(q, n, k, n);
  const std::vector<double> c = inverse(std::move(v), n);
  AxisTransforms t{m,
                   r,
                   n,
                   std::vector<float>(static_cast<size_t>(n * n)),
                   std::vector<double>(static_cast<size_t>(n * r)),
                   std::vector<float>(static_cast<size_t>(m * n))};
  for (int q = 0; q < n; ++q) {
    // Row q of B^T scaled to entries of at most 1, and G's row q by as much: the weights'
    // side is computed in double, once.
    double scale = 0;
    for (int j = 0; j < n; ++j) scale = std::max(scale, std::abs(c[j * n + q]));
    for (int j = 0; j < n; ++j) t.bt[q * n + j] = static_cast<float>(c[j * n + q] / scale);
    for (int k = 0; k < r; ++k) t.g[q * r + k] = power(q, n, k, r) * scale;
    for (int i = 0; i < m; ++i) t.at[i * n + q] = static_cast<float>(power(q, n, i, m));
  }
  return t;
}

// out[row][c] = max(sum_j matrix[row][j] in[j][c] + bias[c], floor), channel by channel, for
// `rows` rows of a kPoints-column matrix: one axis's pass of a tile's transform (in: its pixels,
// zeros in the padding, or its products; no bias and floor -inf but in the output's last pass).
template <int kPoints>
[[gnu::always_inline]] inline void combine(const float* const in[], const float* matrix, int rows,
                                           const float* bias, float floor, int64_t channels,
                                           float* const out[]) {
  for (int row = 0; row < rows; ++row) {
    const float* coefficients = matrix + row * kPoints;
    float* o = out[row];
    // The rows written never overlap the pixels or products read.
    IC_INDEPENDENT_ITERATIONS
    for (int64_t c = 0; c < channels; ++c) {
      float sum = bias[c];
      for (int j = 0; j < kPoints; ++j) sum += coefficients[j] * in[j][c];
      o[c] = std::max(sum, floor);
    }
  }
}

IC_CHANNEL_LOOP void combine6(const float* const in[], const float* matrix, int rows,
                              const float* bias, float floor, int64_t channels,
                              float* const out[]) {
  combine<6>(in, matrix, rows, bias, floor, channels, out);
}

IC_CHANNEL_LOOP void combine8(const float* const in[], const float* matrix, int rows,
                              const float* bias, float floor, int64_t channels,
                              float* const out[]) {
  combine<8>(in, matrix, rows, bias, floor, channels, out);
}

using Combine = void (*)(const float* const[], const float*, int, const float*, float, int64_t,
                         float* const[]);

// The combine loop for n points (an axis that transforms: 6 or 8).
Combine combine_for(int n) { return n == 6 ? combine6 : combine8; }

constexpr int kMaxPoints = 8;  // an axis

// A tile's pixels, products or outputs: one channel vector for each of rows x cols positions.
struct TilePlanes {
  int rows, cols;
  const float* const* at;  // [rows * cols]
};

// One axis's transform: a [rows][points] matrix, and the combine loop for its points (null for
// an axis of one point).
struct AxisPass {
  const float* matrix;
  int rows;
  Combine combine;
};

// The separable transform of one tile: out = H in W^T, channel by channel, W's pass first:
// `w` is [rows_w][in.cols], `h` [rows_h][in.rows], out [rows_h * rows_w]. An axis of one point
// (a 1xr or rx1 kernel) is no pass. The last pass adds `bias` and takes max(., floor); the first
// of two writes `temp`, [in.rows * rows_w].
void separable_transform(const TilePlanes& in, const AxisPass& w, const AxisPass& h,
                         const float* bias, const float* zeros, float floor, int64_t channels,
                         float* const temp[], float* const out[]) {
  if (in.rows == 1) {
    w.combine(in.at, w.matrix, w.rows, bias, floor, channels, out);
    return;
  }
  if (in.cols == 1) {
    h.combine(in.at, h.matrix, h.rows, bias, floor, channels, out);
    return;
  }
  const float* column[kMaxPoints];
  float* outputs[kMaxPoints];
  for (int a = 0; a < in.rows; ++a)
    w.combine(in.at + a * in.cols, w.matrix, w.rows, zeros, -std::numeric_limits<float>::infinity(),
              channels, temp + a * w.rows);
  for (int j = 0; j < w.rows; ++j) {
    for (int a = 0; a < in.rows; ++a) column[a] = temp[a * w.rows + j];
    for (int i = 0; i < h.rows; ++i) outputs[i] = out[i * w.rows + j];
    h.combine(column, h.matrix, h.rows, bias, floor, channels, outputs);
  }
}

// The points of a tile: n along H times n along W.
int64_t points_of(const ToomCookTiling& tiling) {
  return (tiling.outputs_h + tiling.kernel_h - 1) * (tiling.outputs_w + tiling.kernel_w - 1);
}

WinogradTiles tiles_of(const Conv2dDesc& d, const ToomCookTiling& tiling) {
  return winograd_tiles(d, tiling.outputs_h, tiling.outputs_w);
}

// A tile row's slice for the first of two passes (2-D tilings): [n_h][n_w][Ci] of the input's,
// [n_h][m_w][Co] of the output's.
size_t temp_bytes(const Conv2dDesc& d, const ToomCookTiling& tiling) {
  if (tiling.kernel_h == 1 || tiling.kernel_w == 1) return 0;
  const int64_t nh = tiling.outputs_h + tiling.kernel_h - 1;
  const int64_t nw = tiling.outputs_w + tiling.kernel_w - 1;
  return static_cast<size_t>(nh * std::max(nw * d.input.c(), tiling.outputs_w * d.out_channels)) *
         sizeof(float);
}

class WinogradToomCookKernel final : public WinogradKernel {
 public:
  WinogradToomCookKernel(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights,
                         const ToomCookTiling& tiling)
      : WinogradKernel(d, ctx, share_weights, tiling.outputs_h, tiling.outputs_w, points_of(tiling),
                       tiling.packing, temp_bytes(d, tiling)),
        tiling_(tiling),
        th_(axis_transforms(tiling.outputs_h, d.kernel_h)),
        tw_(axis_transforms(tiling.outputs_w, d.kernel_w)) {}

  std::string implementation() const override {
    return std::string("ic:winograd ") + tiling_.name + " " + products_.matmul_name() + " nhwc";
  }

 private:
  // u[p][q][ci][co] = sum_(k,l) Gh[p][k] Gw[q][l] w[k][l][ci][co] (w HWIO), in double.
  void transform_weights(const float* w, float* u) const override {
    const int64_t in_c = d_.input.c(), out_c = d_.out_channels;
    const int kh = th_.r, kw = tw_.r;
    parallel_for(in_c, 1, [&](int64_t ci) {
      for (int p = 0; p < th_.n; ++p)
        for (int q = 0; q < tw_.n; ++q)
          for (int64_t co = 0; co < out_c; ++co) {
            double sum = 0;
            for (int k = 0; k < kh; ++k)
              for (int l = 0; l < kw; ++l)
                sum += th_.g[p * kh + k] * tw_.g[q * kw + l] *
                       w[((k * kw + l) * in_c + ci) * out_c + co];
            u[((p * tw_.n + q) * in_c + ci) * out_c + co] = static_cast<float>(sum);
          }
    });
  }

  // The pass along one axis with `matrix` (bt or at of `t`), `rows` rows of it.
  static AxisPass pass(const AxisTransforms& t, const std::vector<float>& matrix, int rows) {
    return {matrix.data(), rows, t.n > 1 ? combine_for(t.n) : nullptr};
  }
  // Tile row `row`'s temp slice as `planes` planes of `channels`; none for a 1-D tiling, whose
  // one pass needs no temp (and has no slice).
  void row_temps(int64_t row, int planes, int64_t channels, float* temps[]) const {
    if (th_.n == 1 || tw_.n == 1) return;
    for (int k = 0; k < planes; ++k) temps[k] = temp(row) + k * channels;
  }

  void transform_input(const float* x) override {
    const int64_t channels = d_.input.c();
    const int nh = th_.n, nw = tw_.n;
    const AxisPass w = pass(tw_, tw_.bt, nw), h = pass(th_, th_.bt, nh);
    parallel_for(tiles_.rows, 1, [&](int64_t row) {
      float* temps[kMaxPoints * kMaxPoints];
      row_temps(row, nh * nw, channels, temps);
      for (int64_t col = 0; col < tiles_.cols; ++col) {
        const float* pixels[kMaxPoints * kMaxPoints];
        float* v[kMaxPoints * kMaxPoints];
        const int64_t tile = row * tiles_.cols + col;
        for (int a = 0; a < nh; ++a)
          for (int b = 0; b < nw; ++b) {
            pixels[a * nw + b] =
                input_pixel(x, row * th_.m - pads_.top + a, col * tw_.m - pads_.left + b);
            v[a * nw + b] = plane(products_.v(), a * nw + b, tile, channels);
          }
        separable_transform({nh, nw, pixels}, w, h, zeros(), zeros(),
                            -std::numeric_limits<float>::infinity(), channels, temps, v);
      }
    });
  }

  void transform_output(float* y) override {
    const int64_t channels = d_.out_channels;
    const int nh = th_.n, nw = tw_.n, mh = th_.m, mw = tw_.m;
    const AxisPass w = pass(tw_, tw_.at, mw), h = pass(th_, th_.at, mh);
    parallel_for(tiles_.rows, 1, [&](int64_t row) {
      float* temps[kMaxPoints * kMaxPoints];
      row_temps(row, nh * mw, channels, temps);
      for (int64_t col = 0; col < tiles_.cols; ++col) {
        const float* m[kMaxPoints * kMaxPoints];
        float* out[kMaxPoints * kMaxPoints];
        const int64_t tile = row * tiles_.cols + col;
        for (int k = 0; k < nh * nw; ++k) m[k] = plane(products_.m(), k, tile, channels);
        for (int i = 0; i < mh; ++i)
          for (int j = 0; j < mw; ++j)
            out[i * mw + j] = output_pixel(y, row * mh + i, col * mw + j, row);
        separable_transform({nh, nw, m}, w, h, bias(), zeros(), relu_floor(), channels, temps, out);
      }
    });
  }

  const ToomCookTiling& tiling_;
  const AxisTransforms th_, tw_;  // along H and along W
};

}  // namespace

bool winograd_toom_cook_conv_applies(const Conv2dDesc& d) {
  const ToomCookTiling* tiling = tiling_of(d);
  if (!tiling) return false;
  const WinogradTiles tiles = tiles_of(d, *tiling);
  return tiles.count() >= tiling->min_tiles && winograd_takes(d, points_of(*tiling), tiles);
}

std::unique_ptr<OpKernel> make_winograd_toom_cook_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                                       bool share_weights) {
  return std::make_unique<WinogradToomCookKernel>(d, ctx, share_weights, *tiling_of(d));
}

}  // namespace ic::cpu
