#include "backend/cpu/winograd_line_conv.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/channel_loops.h"
#include "backend/cpu/winograd_products.h"

namespace ic::cpu {
namespace {

// The tile for each kernel length: its outputs, and the name of the transformed weights' layout
// among the converted weights. At most 8 points: a ninth would be +-3 or +-1/4, whose
// transforms round too much in float32.
struct LineTiling {
  int taps, outputs;
  const char* name;     // in implementation()
  const char* packing;  // ConvertedWeights::packing
};
constexpr LineTiling kLineTilings[] = {
    {3, 4, "F(4,3)", "ic:winograd F(4,3) [6][Ci][Co]"},
    {7, 2, "F(2,7)", "ic:winograd F(2,7) [8][Ci][Co]"},
};

const LineTiling* line_tiling(int taps) {
  for (const LineTiling& tiling : kLineTilings)
    if (tiling.taps == taps) return &tiling;
  return nullptr;
}

// The finite interpolation points, in the order they are taken (infinity is always the last
// point): small integers first, then halves, so that the transforms' entries stay small.
constexpr double kLinePoints[] = {0, 1, -1, 2, -2, 0.5, -0.5};

// The value at point `point` of n (the last is infinity) of the polynomial whose `terms`
// coefficients a row of these multiplies: the point's powers, or at infinity the leading
// coefficient alone.
double power(int point, int n, int k, int terms) {
  if (point == n - 1) return k == terms - 1 ? 1.0 : 0.0;
  return std::pow(kLinePoints[point], k);
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

// Toom-Cook's matrices for F(m, r) on n = m + r - 1 points. The product s = g * h of two
// polynomials of r and m coefficients is s = C [(G g) .* (A h)]: G and A evaluate g and h at the
// points, C = V^-1 interpolates s from its values (V evaluates n coefficients). The correlation
// y_i = sum_k g_k x_(i+k) is the transpose of h -> s for a fixed g, so
// y = A^T [(G g) .* (C^T x)], and B^T = C^T.
struct LineTransforms {
  int m, r, n;
  std::vector<float> bt;  // [n][n]: v = B^T x, x a tile's n input pixels
  std::vector<double> g;  // [n][r]: u = G w, w the kernel's r taps (applied in double, once)
  std::vector<float> at;  // [m][n]: y = A^T (u .* v)
};

LineTransforms line_transforms(int m, int r) {
  const int n = m + r - 1;
  std::vector<double> v(static_cast<size_t>(n * n));
  for (int q = 0; q < n; ++q)
    for (int k = 0; k < n; ++k) v[q * n + k] = power(q, n, k, n);
  const std::vector<double> c = inverse(std::move(v), n);
  LineTransforms t{m,
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
// rows rows of a kPoints-column matrix: a tile's input transform (in: its pixels, zeros in the
// padding; no bias, floor -inf) and its output transform (in: the products; the bias, and
// floor 0 for a fused ReLU).
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

constexpr int kMaxPoints = 8;
constexpr size_t kLineTileBytes = size_t{64} << 20;  // one image's transformed input, products

// The tiles of one image: `rows` x `cols`, a tile being `outputs` output pixels along the
// kernel's axis (W for 1xr, H for rx1).
struct LineTiles {
  int64_t rows, cols;
  int64_t count() const { return rows * cols; }
};

LineTiles line_tiles(const Conv2dDesc& d, int outputs) {
  const Shape out = d.output();
  if (d.kernel_h == 1) return {out.h(), (out.w() + outputs - 1) / outputs};
  return {(out.h() + outputs - 1) / outputs, out.w()};
}

class WinogradLineConvKernel final : public OpKernel {
 public:
  WinogradLineConvKernel(const Conv2dDesc& d, DnnlContext& ctx, bool share_weights,
                         const LineTiling& tiling)
      : d_(d),
        out_(d.output()),
        along_w_(d.kernel_h == 1),
        tiling_(tiling),
        t_(line_transforms(tiling.outputs, tiling.taps)),
        pads_(tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, 1, 1, d.padding)),
        tiles_(line_tiles(d, tiling.outputs)),
        zeros_(static_cast<size_t>(std::max(d.input.c(), d.out_channels)), 0.f),
        combine_(t_.n == 6 ? combine6 : combine8),
        products_(t_.n, tiles_.count(), d.input.c(), d.out_channels, tiling.packing, ctx,
                  share_weights),
        discard_bytes_(align64(static_cast<size_t>(tiles_.rows * d.out_channels) * sizeof(float))) {
  }

  size_t workspace_bytes() const override { return products_.workspace_bytes() + discard_bytes_; }
  BackwardReads backward_reads() const override { return {false, false}; }
  std::string implementation() const override {
    return std::string("ic:winograd ") + tiling_.name + (along_w_ ? " along w " : " along h ") +
           products_.matmul_name() + " nhwc";
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
    if (float* u = products_.weights_to_fill()) {
      transform_weights(u);
      products_.weights_filled();
    }
    const int64_t in_image = d_.input.h() * d_.input.w() * d_.input.c();
    const int64_t out_image = out_.h() * out_.w() * out_.c();
    for (int64_t image = 0; image < d_.input.n(); ++image) {
      transform_input(x_ + image * in_image);
      products_.run();
      transform_output(y_ + image * out_image);
    }
  }
  void backward(const StepContext&) override {}  // forward only (winograd_line_conv_applies)

 private:
  // u[q][ci][co] = sum_k G[q][k] w[k][ci][co] (w HWIO: the taps are its outermost axis).
  void transform_weights(float* u) const {
    const int64_t in_c = d_.input.c(), out_c = d_.out_channels, taps = t_.r;
    parallel_for(in_c, 1, [&](int64_t ci) {
      for (int q = 0; q < t_.n; ++q)
        for (int64_t co = 0; co < out_c; ++co) {
          double sum = 0;
          for (int k = 0; k < taps; ++k)
            sum += t_.g[q * taps + k] * weights_[(k * in_c + ci) * out_c + co];
          u[(q * in_c + ci) * out_c + co] = static_cast<float>(sum);
        }
    });
  }

  // Tile (row, col)'s first output pixel, and the step along the kernel's axis.
  std::pair<int64_t, int64_t> tile_origin(int64_t row, int64_t col) const {
    return along_w_ ? std::pair{row, col * t_.m} : std::pair{row * t_.m, col};
  }

  void transform_input(const float* x) {
    const int64_t in_h = d_.input.h(), in_w = d_.input.w(), channels = d_.input.c();
    const int64_t plane = tiles_.count() * channels;
    const int dh = along_w_ ? 0 : 1, dw = along_w_ ? 1 : 0;
    const float floor = -std::numeric_limits<float>::infinity();
    parallel_for(tiles_.rows, 1, [&](int64_t row) {
      for (int64_t col = 0; col < tiles_.cols; ++col) {
        const auto [oh, ow] = tile_origin(row, col);
        const float* pixels[kMaxPoints];
        float* v[kMaxPoints];
        const int64_t tile = row * tiles_.cols + col;
        for (int j = 0; j < t_.n; ++j) {
          const int64_t ih = oh - pads_.top + j * dh, iw = ow - pads_.left + j * dw;
          const bool inside = ih >= 0 && ih < in_h && iw >= 0 && iw < in_w;
          pixels[j] = inside ? x + (ih * in_w + iw) * channels : zeros_.data();
          v[j] = products_.v() + j * plane + tile * channels;
        }
        combine_(pixels, t_.bt.data(), t_.n, zeros_.data(), floor, channels, v);
      }
    });
  }

  void transform_output(float* y) {
    const int64_t channels = d_.out_channels;
    const int64_t plane = tiles_.count() * channels;
    const int dh = along_w_ ? 0 : 1, dw = along_w_ ? 1 : 0;
    const float floor = d_.fused_relu ? 0.f : -std::numeric_limits<float>::infinity();
    parallel_for(tiles_.rows, 1, [&](int64_t row) {
      // Where a tile's last outputs fall past the output (sizes not a multiple of m): the row's
      // own slice of the workspace, so that threads never share it.
      float* discard = discard_ + row * channels;
      for (int64_t col = 0; col < tiles_.cols; ++col) {
        const auto [oh0, ow0] = tile_origin(row, col);
        const float* m[kMaxPoints];
        float* out[kMaxPoints];
        const int64_t tile = row * tiles_.cols + col;
        for (int q = 0; q < t_.n; ++q) m[q] = products_.m() + q * plane + tile * channels;
        for (int i = 0; i < t_.m; ++i) {
          const int64_t oh = oh0 + i * dh, ow = ow0 + i * dw;
          out[i] = oh < out_.h() && ow < out_.w() ? y + (oh * out_.w() + ow) * channels : discard;
        }
        combine_(m, t_.at.data(), t_.m, bias_, floor, channels, out);
      }
    });
  }

  using Combine = void (*)(const float* const[], const float*, int, const float*, float, int64_t,
                           float* const[]);

  Conv2dDesc d_;
  Shape out_;
  bool along_w_;  // a 1xr kernel (else rx1)
  const LineTiling& tiling_;
  LineTransforms t_;
  Pads pads_;
  LineTiles tiles_;
  std::vector<float> zeros_;  // the padding's input pixels, and the bias where there is none
  Combine combine_;           // the transforms' loop for t_.n points
  WinogradProducts products_;
  size_t discard_bytes_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  const float* weights_ = nullptr;
  const float* bias_ = nullptr;
  float* discard_ = nullptr;  // [tile rows][Co]: outputs past the edge
};

// The tiling for `d`'s kernel, where it is 1xr or rx1 with a tiling for r.
const LineTiling* tiling_of(const Conv2dDesc& d) {
  if (d.kernel_h == 1 && d.kernel_w > 1) return line_tiling(d.kernel_w);
  if (d.kernel_w == 1 && d.kernel_h > 1) return line_tiling(d.kernel_h);
  return nullptr;
}

}  // namespace

bool winograd_line_conv_applies(const Conv2dDesc& d) {
  const LineTiling* tiling = tiling_of(d);
  if (!tiling || d.training || d.int8 || d.fused_depthwise || d.fused_activation || d.groups != 1 ||
      d.activations != DType::f32 || !d.constant_weights || d.stride_h != 1 || d.stride_w != 1)
    return false;
  const int n = tiling->outputs + tiling->taps - 1;
  const size_t bytes = static_cast<size_t>(n * line_tiles(d, tiling->outputs).count() *
                                           (d.input.c() + d.out_channels)) *
                       sizeof(float);
  return bytes <= kLineTileBytes;
}

std::unique_ptr<OpKernel> make_winograd_line_conv(const Conv2dDesc& d, DnnlContext& ctx,
                                                  bool share_weights) {
  return std::make_unique<WinogradLineConvKernel>(d, ctx, share_weights, *tiling_of(d));
}

}  // namespace ic::cpu
