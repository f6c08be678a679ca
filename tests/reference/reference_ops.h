// Plain-loop reference implementations of every op, in double precision, written for
// clarity rather than speed. Backends are tested against these; these are tested against
// central finite differences of themselves. Layouts: activations NHWC, conv kernels HWIO,
// dense weights [K,M].
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/ops.h"

namespace ic::ref {

using Vec = std::vector<double>;

struct Dims4 {
  int64_t n, h, w, c;
  int64_t at(int64_t in, int64_t ih, int64_t iw, int64_t ic) const {
    return ((in * h + ih) * w + iw) * c + ic;
  }
  int64_t size() const { return n * h * w * c; }
};
inline Dims4 dims(const Shape& s) { return {s.n(), s.h(), s.w(), s.c()}; }

// Convolution -------------------------------------------------------------------------------
struct ConvGeometry {
  Dims4 in, out;
  int kh, kw, sh, sw;
  int top, left;  // padding before; the padding after is implied by the output size
  explicit ConvGeometry(const Conv2dDesc& d)
      : in(dims(d.input)),
        out(dims(d.output())),
        kh(d.kernel_h),
        kw(d.kernel_w),
        sh(d.stride_h),
        sw(d.stride_w) {
    groups = d.groups;
    const Pads p = tf_pads(d.input.h(), d.input.w(), d.kernel_h, d.kernel_w, d.stride_h, d.stride_w,
                           d.padding);
    top = p.top;
    left = p.left;
  }
  int64_t groups = 1;
  // ci: the channel within the filter's group (0 .. in.c / groups).
  int64_t w_at(int64_t i, int64_t j, int64_t ci, int64_t co) const {
    return ((i * kw + j) * (in.c / groups) + ci) * out.c + co;
  }
  // Calls f(x index, w index, y index) for every multiply-add of the convolution.
  template <typename F>
  void each(F f) const {
    for (int64_t n = 0; n < out.n; ++n)
      for (int64_t oh = 0; oh < out.h; ++oh)
        for (int64_t ow = 0; ow < out.w; ++ow)
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t ih = oh * sh - top + i, iw = ow * sw - left + j;
              if (ih < 0 || ih >= in.h || iw < 0 || iw >= in.w) continue;
              // Output channel co reads the input channels of its group only.
              const int64_t in_group = in.c / groups, out_group = out.c / groups;
              for (int64_t co = 0; co < out.c; ++co) {
                const int64_t first = co / out_group * in_group;
                for (int64_t ci = 0; ci < in_group; ++ci)
                  f(in.at(n, ih, iw, first + ci), w_at(i, j, ci, co), out.at(n, oh, ow, co));
              }
            }
  }
};

inline Vec conv2d_forward(const Conv2dDesc& d, const Vec& x, const Vec& w, const Vec& b) {
  const ConvGeometry g(d);
  Vec y(static_cast<size_t>(g.out.size()), 0.0);
  g.each([&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += x[xi] * w[wi]; });
  if (!b.empty())
    for (size_t i = 0; i < y.size(); ++i) y[i] += b[i % static_cast<size_t>(g.out.c)];
  return y;
}

struct ConvGrads {
  Vec dx, dw, db;
};
inline ConvGrads conv2d_backward(const Conv2dDesc& d, const Vec& x, const Vec& w, const Vec& dy) {
  const ConvGeometry g(d);
  ConvGrads r{Vec(x.size(), 0.0), Vec(w.size(), 0.0), Vec(static_cast<size_t>(g.out.c), 0.0)};
  g.each([&](int64_t xi, int64_t wi, int64_t yi) {
    r.dx[xi] += w[wi] * dy[yi];
    r.dw[wi] += x[xi] * dy[yi];
  });
  for (size_t i = 0; i < dy.size(); ++i) r.db[i % r.db.size()] += dy[i];
  return r;
}

// Batch norm ---------------------------------------------------------------------------------
struct BatchNormResult {
  Vec y, mean, variance;  // batch statistics (variance biased) in training
};
// gamma empty = 1. Training uses batch statistics, inference the given moving ones.
inline BatchNormResult batch_norm_forward(const BatchNormDesc& d, const Vec& x, const Vec& beta,
                                          const Vec& gamma, const Vec& moving_mean,
                                          const Vec& moving_var) {
  const int64_t C = d.input.c(), M = d.input.numel() / C;
  BatchNormResult r{Vec(x.size()), Vec(C, 0.0), Vec(C, 0.0)};
  if (d.training) {
    for (int64_t i = 0; i < M * C; ++i) r.mean[i % C] += x[i] / M;
    for (int64_t i = 0; i < M * C; ++i)
      r.variance[i % C] += (x[i] - r.mean[i % C]) * (x[i] - r.mean[i % C]) / M;
  } else {
    r.mean = moving_mean;
    r.variance = moving_var;
  }
  for (int64_t i = 0; i < M * C; ++i) {
    const int64_t c = i % C;
    const double g = gamma.empty() ? 1.0 : gamma[c];
    double v = (x[i] - r.mean[c]) / std::sqrt(r.variance[c] + d.epsilon) * g + beta[c];
    if (d.fused_relu) v = std::max(v, 0.0);
    r.y[i] = v;
  }
  return r;
}

struct BatchNormGrads {
  Vec dx, dbeta, dgamma;
};
// Training-mode backward (batch statistics depend on x).
inline BatchNormGrads batch_norm_backward(const BatchNormDesc& d, const Vec& x, const Vec& gamma,
                                          const BatchNormResult& fwd, const Vec& dy) {
  const int64_t C = d.input.c(), M = d.input.numel() / C;
  BatchNormGrads r{Vec(x.size()), Vec(C, 0.0), Vec(C, 0.0)};
  Vec g(x.size()), xhat(x.size());
  for (int64_t i = 0; i < M * C; ++i) {
    const int64_t c = i % C;
    xhat[i] = (x[i] - fwd.mean[c]) / std::sqrt(fwd.variance[c] + d.epsilon);
    g[i] = d.fused_relu && fwd.y[i] <= 0 ? 0.0 : dy[i];
    r.dbeta[c] += g[i];
    r.dgamma[c] += g[i] * xhat[i];
  }
  for (int64_t i = 0; i < M * C; ++i) {
    const int64_t c = i % C;
    const double scale = (gamma.empty() ? 1.0 : gamma[c]) / std::sqrt(fwd.variance[c] + d.epsilon);
    r.dx[i] = scale * (g[i] - r.dbeta[c] / M - xhat[i] * r.dgamma[c] / M);
  }
  return r;
}

// Pooling ------------------------------------------------------------------------------------
// Calls f(x index list, y index) per output window; padding positions are left out.
template <typename F>
void pool_windows(const Pool2dDesc& d, F f) {
  const Dims4 in = dims(d.input), out = dims(d.output());
  const Pads p = tf_pads(in.h, in.w, d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, d.padding);
  std::vector<int64_t> window;
  for (int64_t n = 0; n < out.n; ++n)
    for (int64_t oh = 0; oh < out.h; ++oh)
      for (int64_t ow = 0; ow < out.w; ++ow)
        for (int64_t c = 0; c < out.c; ++c) {
          window.clear();
          for (int i = 0; i < d.kernel_h; ++i)
            for (int j = 0; j < d.kernel_w; ++j) {
              const int64_t ih = oh * d.stride_h - p.top + i, iw = ow * d.stride_w - p.left + j;
              if (ih >= 0 && ih < in.h && iw >= 0 && iw < in.w)
                window.push_back(in.at(n, ih, iw, c));
            }
          f(window, out.at(n, oh, ow, c));
        }
}

inline Vec pool2d_forward(const Pool2dDesc& d, const Vec& x) {
  Vec y(static_cast<size_t>(d.output().numel()));
  pool_windows(d, [&](const std::vector<int64_t>& win, int64_t yi) {
    double acc = d.kind == PoolKind::max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t xi : win) acc = d.kind == PoolKind::max ? std::max(acc, x[xi]) : acc + x[xi];
    y[yi] = d.kind == PoolKind::max ? acc : acc / static_cast<double>(win.size());
  });
  return y;
}

inline Vec pool2d_backward(const Pool2dDesc& d, const Vec& x, const Vec& dy) {
  Vec dx(x.size(), 0.0);
  pool_windows(d, [&](const std::vector<int64_t>& win, int64_t yi) {
    if (d.kind == PoolKind::max) {
      int64_t best = win[0];
      for (int64_t xi : win)
        if (x[xi] > x[best]) best = xi;
      dx[best] += dy[yi];
    } else {
      for (int64_t xi : win) dx[xi] += dy[yi] / static_cast<double>(win.size());
    }
  });
  return dx;
}

inline Vec global_avg_pool_forward(const Shape& s, const Vec& x) {
  const int64_t hw = s.h() * s.w(), C = s.c();
  Vec y(static_cast<size_t>(s.n() * C), 0.0);
  for (int64_t i = 0; i < s.numel(); ++i) y[(i / (hw * C)) * C + i % C] += x[i] / hw;
  return y;
}

// Concat along channels ----------------------------------------------------------------------
inline Vec concat_forward(const std::vector<Shape>& shapes, const std::vector<Vec>& xs) {
  int64_t total = 0;
  for (const Shape& s : shapes) total += s.c();
  const int64_t pixels = shapes[0].numel() / shapes[0].c();
  Vec y(static_cast<size_t>(pixels * total));
  int64_t offset = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const int64_t c = shapes[k].c();
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t j = 0; j < c; ++j) y[p * total + offset + j] = xs[k][p * c + j];
    offset += c;
  }
  return y;
}

// Dense: y[N,M] = x[N,K] w[K,M] + b ----------------------------------------------------------
inline Vec dense_forward(int64_t N, int64_t K, int64_t M, const Vec& x, const Vec& w,
                         const Vec& b) {
  Vec y(static_cast<size_t>(N * M), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      double acc = b.empty() ? 0.0 : b[m];
      for (int64_t k = 0; k < K; ++k) acc += x[n * K + k] * w[k * M + m];
      y[n * M + m] = acc;
    }
  return y;
}
struct DenseGrads {
  Vec dx, dw, db;
};
inline DenseGrads dense_backward(int64_t N, int64_t K, int64_t M, const Vec& x, const Vec& w,
                                 const Vec& dy) {
  DenseGrads r{Vec(static_cast<size_t>(N * K), 0.0), Vec(static_cast<size_t>(K * M), 0.0),
               Vec(static_cast<size_t>(M), 0.0)};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      r.db[m] += dy[n * M + m];
      for (int64_t k = 0; k < K; ++k) {
        r.dx[n * K + k] += w[k * M + m] * dy[n * M + m];
        r.dw[k * M + m] += x[n * K + k] * dy[n * M + m];
      }
    }
  return r;
}

// Softmax cross-entropy with label smoothing; rows with label < 0 are padding ------------------
inline double softmax_xent_forward(const SoftmaxCrossEntropyDesc& d, const Vec& logits,
                                   const std::vector<int32_t>& labels) {
  const int64_t C = d.num_classes;
  double total = 0.0;
  int64_t valid = 0;
  for (int64_t n = 0; n < d.batch; ++n) {
    if (labels[n] < 0) continue;
    ++valid;
    double mx = logits[n * C];
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, logits[n * C + c]);
    double se = 0.0;
    for (int64_t c = 0; c < C; ++c) se += std::exp(logits[n * C + c] - mx);
    for (int64_t c = 0; c < C; ++c) {
      const double target =
          (c == labels[n] ? 1.0 - d.label_smoothing : 0.0) + d.label_smoothing / C;
      total -= target * (logits[n * C + c] - mx - std::log(se));
    }
  }
  return valid ? d.weight * total / valid : 0.0;
}
inline Vec softmax_xent_backward(const SoftmaxCrossEntropyDesc& d, const Vec& logits,
                                 const std::vector<int32_t>& labels) {
  const int64_t C = d.num_classes;
  int64_t valid = 0;
  for (int64_t n = 0; n < d.batch; ++n) valid += labels[n] >= 0;
  Vec dx(logits.size(), 0.0);
  for (int64_t n = 0; n < d.batch; ++n) {
    if (labels[n] < 0) continue;
    double mx = logits[n * C], se = 0.0;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, logits[n * C + c]);
    for (int64_t c = 0; c < C; ++c) se += std::exp(logits[n * C + c] - mx);
    for (int64_t c = 0; c < C; ++c) {
      const double target =
          (c == labels[n] ? 1.0 - d.label_smoothing : 0.0) + d.label_smoothing / C;
      dx[n * C + c] = d.weight * (std::exp(logits[n * C + c] - mx) / se - target) / valid;
    }
  }
  return dx;
}

// Dropout: splitmix64's index-th output, top 24 bits vs floor(keep_prob * 2^24) ------------
inline bool dropout_keep(uint64_t seed, uint64_t index, float keep_prob) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 40) < std::floor(static_cast<double>(keep_prob) * 16777216.0);
}
inline Vec dropout_forward(const Vec& x, float keep_prob, uint64_t seed) {
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = dropout_keep(seed, i, keep_prob) ? x[i] / static_cast<double>(keep_prob) : 0.0;
  return y;
}

// Drop-connect: one draw per example (index n), the whole example kept or dropped.
inline Vec drop_connect_forward(const Vec& x, int64_t batch, float keep_prob, uint64_t seed) {
  Vec y(x.size());
  const size_t per = x.size() / static_cast<size_t>(batch);
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = dropout_keep(seed, i / per, keep_prob) ? x[i] / static_cast<double>(keep_prob) : 0.0;
  return y;
}

// ReLU6, sigmoid, swish and their derivatives (ReLU6's passes where 0 < x < 6, as TF's) ---------
inline double activation_value(Activation f, double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  switch (f) {
    case Activation::relu6: return std::min(std::max(x, 0.0), 6.0);
    case Activation::sigmoid: return s;
    case Activation::swish: return x * s;
  }
  return 0.0;
}
inline double activation_derivative(Activation f, double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  switch (f) {
    case Activation::relu6: return x > 0.0 && x < 6.0 ? 1.0 : 0.0;
    case Activation::sigmoid: return s * (1.0 - s);
    case Activation::swish: return s + x * s * (1.0 - s);
  }
  return 0.0;
}
inline Vec activation_forward(Activation f, const Vec& x) {
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = activation_value(f, x[i]);
  return y;
}
inline Vec activation_backward(Activation f, const Vec& x, const Vec& dy) {
  Vec dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) dx[i] = dy[i] * activation_derivative(f, x[i]);
  return dx;
}

// Squeeze-and-excitation's product: y[n,h,w,c] = x[n,h,w,c] * s[n,c] -------------------------
inline Vec channel_scale_forward(const Shape& shape, const Vec& x, const Vec& s) {
  const Dims4 d = dims(shape);
  Vec y(x.size());
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t h = 0; h < d.h; ++h)
      for (int64_t w = 0; w < d.w; ++w)
        for (int64_t c = 0; c < d.c; ++c)
          y[d.at(n, h, w, c)] = x[d.at(n, h, w, c)] * s[n * d.c + c];
  return y;
}
struct ChannelScaleGrads {
  Vec dx, ds;
};
inline ChannelScaleGrads channel_scale_backward(const Shape& shape, const Vec& x, const Vec& s,
                                                const Vec& dy) {
  const Dims4 d = dims(shape);
  ChannelScaleGrads g{Vec(x.size(), 0.0), Vec(s.size(), 0.0)};
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t h = 0; h < d.h; ++h)
      for (int64_t w = 0; w < d.w; ++w)
        for (int64_t c = 0; c < d.c; ++c) {
          const int64_t i = d.at(n, h, w, c);
          g.dx[i] = dy[i] * s[n * d.c + c];
          g.ds[n * d.c + c] += dy[i] * x[i];
        }
  return g;
}

// Zero padding and its gradient (the crop) ---------------------------------------------------
inline Vec pad_forward(const PadDesc& p, const Vec& x) {
  const Dims4 in = dims(p.input), out = dims(p.output());
  Vec y(static_cast<size_t>(out.size()), 0.0);
  for (int64_t n = 0; n < in.n; ++n)
    for (int64_t h = 0; h < in.h; ++h)
      for (int64_t w = 0; w < in.w; ++w)
        for (int64_t c = 0; c < in.c; ++c)
          y[out.at(n, h + p.pads.top, w + p.pads.left, c)] = x[in.at(n, h, w, c)];
  return y;
}
inline Vec pad_backward(const PadDesc& p, const Vec& dy) {
  const Dims4 in = dims(p.input), out = dims(p.output());
  Vec dx(static_cast<size_t>(in.size()));
  for (int64_t n = 0; n < in.n; ++n)
    for (int64_t h = 0; h < in.h; ++h)
      for (int64_t w = 0; w < in.w; ++w)
        for (int64_t c = 0; c < in.c; ++c)
          dx[in.at(n, h, w, c)] = dy[out.at(n, h + p.pads.top, w + p.pads.left, c)];
  return dx;
}

// Central differences: d f / d x[i] for the scalar function f of the vector x.
template <typename F>
double numeric_derivative(F f, Vec x, size_t i, double h) {
  const double saved = x[i];
  x[i] = saved + h;
  const double plus = f(x);
  x[i] = saved - h;
  const double minus = f(x);
  return (plus - minus) / (2 * h);
}

inline double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace ic::ref
