#include "backend/cpu/batch_norm_backward.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/bf16_avx512.h"
#include "core/tensor.h"

namespace ic::cpu {
namespace {

// Rows summed into registers before they are added to a thread's totals: 64 rows' sums in
// float, then 64-row partial sums added, rather than one running sum over a million rows.
constexpr int64_t kRowBlock = 64;

// Per-channel values both passes use (mean_g and mean_gx: the second pass only).
struct Channels {
  const float* rstd;     // 1 / sqrt(variance + epsilon)
  const float* scale;    // gamma, or 1
  const float* k;        // scale * rstd
  const float* mean_g;   // dbeta / rows
  const float* mean_gx;  // dgamma / rows
};

// g and xhat of one element, as the vector loops compute them.
inline void gradient_at(const BatchNormBackwardArgs& a, const Channels& ch, int64_t r, int64_t c,
                        float& g, float& t) {
  const int64_t i = r * a.channels + c;
  t = (bf16_to_float(a.x[i]) - a.mean[c]) * ch.rstd[c];
  g = a.dy[i];
  if (a.relu) {
    const float scaled = t * ch.scale[c];
    if (!(scaled + a.beta[c] > 0.f)) g = 0.f;
  }
}

void sums_plain(const BatchNormBackwardArgs& a, const Channels& ch, int64_t r0, int64_t r1,
                int64_t c0, float* sum_g, float* sum_gx) {
  for (int64_t c = c0; c < a.channels; ++c) {
    for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
      float block_g = 0, block_gx = 0;
      for (int64_t r = rb; r < std::min(r1, rb + kRowBlock); ++r) {
        float g, t;
        gradient_at(a, ch, r, c, g, t);
        block_g += g;
        block_gx += g * t;
      }
      sum_g[c] += block_g;
      sum_gx[c] += block_gx;
    }
  }
}

void dx_plain(const BatchNormBackwardArgs& a, const Channels& ch, int64_t r0, int64_t r1,
              int64_t c0) {
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = c0; c < a.channels; ++c) {
      float g, t;
      gradient_at(a, ch, r, c, g, t);
      a.dx[r * a.channels + c] = ch.k[c] * (g - ch.mean_g[c] - t * ch.mean_gx[c]);
    }
  }
}

#if defined(__x86_64__)
// The same arithmetic on 16 channels at a time (channels [0, vector_channels)).
struct Lanes {
  __m512 mean, rstd, scale, beta;
};

IC_AVX512_INLINE Lanes lanes_at(const BatchNormBackwardArgs& a, const Channels& ch, int64_t c) {
  return {_mm512_loadu_ps(a.mean + c), _mm512_loadu_ps(ch.rstd + c), _mm512_loadu_ps(ch.scale + c),
          _mm512_loadu_ps(a.beta + c)};
}

IC_AVX512_INLINE __m512 gradient16(const BatchNormBackwardArgs& a, const Lanes& l, int64_t i,
                                   __m512& t) {
  t = _mm512_mul_ps(_mm512_sub_ps(avx512::load16(a.x + i), l.mean), l.rstd);
  const __m512 g = _mm512_loadu_ps(a.dy + i);
  if (!a.relu) return g;
  const __m512 y = _mm512_add_ps(_mm512_mul_ps(t, l.scale), l.beta);
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ), g);
}

// Row blocks outside, channels inside: a block's rows (64 x channels) stay in cache while each
// group of 16 channels is summed, where channels outside would stream every row once per group.
IC_AVX512 void sums_avx512(const BatchNormBackwardArgs& a, const Channels& ch, int64_t r0,
                           int64_t r1, int64_t vector_channels, float* sum_g, float* sum_gx) {
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    for (int64_t c = 0; c < vector_channels; c += 16) {
      const Lanes l = lanes_at(a, ch, c);
      __m512 block_g = _mm512_setzero_ps(), block_gx = _mm512_setzero_ps();
      for (int64_t r = rb; r < std::min(r1, rb + kRowBlock); ++r) {
        __m512 t;
        const __m512 g = gradient16(a, l, r * a.channels + c, t);
        block_g = _mm512_add_ps(block_g, g);
        block_gx = _mm512_add_ps(block_gx, _mm512_mul_ps(g, t));
      }
      _mm512_storeu_ps(sum_g + c, _mm512_add_ps(_mm512_loadu_ps(sum_g + c), block_g));
      _mm512_storeu_ps(sum_gx + c, _mm512_add_ps(_mm512_loadu_ps(sum_gx + c), block_gx));
    }
  }
}

IC_AVX512 void dx_avx512(const BatchNormBackwardArgs& a, const Channels& ch, int64_t r0, int64_t r1,
                         int64_t vector_channels) {
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    for (int64_t c = 0; c < vector_channels; c += 16) {
      const Lanes l = lanes_at(a, ch, c);
      const __m512 k = _mm512_loadu_ps(ch.k + c), mean_g = _mm512_loadu_ps(ch.mean_g + c);
      const __m512 mean_gx = _mm512_loadu_ps(ch.mean_gx + c);
      for (int64_t r = rb; r < std::min(r1, rb + kRowBlock); ++r) {
        const int64_t i = r * a.channels + c;
        __m512 t;
        const __m512 g = gradient16(a, l, i, t);
        const __m512 centred = _mm512_sub_ps(_mm512_sub_ps(g, mean_g), _mm512_mul_ps(t, mean_gx));
        _mm512_storeu_ps(a.dx + i, _mm512_mul_ps(k, centred));
      }
    }
  }
}
#endif

// The rows of share `s` of `shares`.
int64_t share_begin(int64_t rows, int s, int shares) { return rows * s / shares; }

}  // namespace

size_t batch_norm_backward_scratch_floats(int64_t channels, int threads) {
  return static_cast<size_t>(channels) * (5 + 2 * static_cast<size_t>(std::max(threads, 1)));
}

void batch_norm_backward_bf16(const BatchNormBackwardArgs& a, int threads, float* scratch) {
  threads = std::max(threads, 1);
  const int64_t c_count = a.channels;
  float* rstd = scratch;
  float* scale = rstd + c_count;
  float* k = scale + c_count;
  float* mean_g = k + c_count;
  float* mean_gx = mean_g + c_count;
  float* partial = mean_gx + c_count;  // per share: [sum g][sum g*xhat]
  for (int64_t c = 0; c < c_count; ++c) {
    rstd[c] = 1.f / std::sqrt(a.variance[c] + a.epsilon);
    scale[c] = a.gamma ? a.gamma[c] : 1.f;
    k[c] = scale[c] * rstd[c];
  }
  std::fill_n(partial, 2 * c_count * threads, 0.f);
  const Channels ch{rstd, scale, k, mean_g, mean_gx};
  int64_t vector_channels = 0;
#if defined(__x86_64__)
  if (avx512::available()) vector_channels = c_count / 16 * 16;
#endif
  // Each share is computed by one thread whatever number the runtime gives, so the sums are
  // the same from run to run.
  auto each_share = [&](auto body) {
#pragma omp parallel num_threads(threads)
    for (int s = omp_get_thread_num(); s < threads; s += omp_get_num_threads())
      body(s, share_begin(a.rows, s, threads), share_begin(a.rows, s + 1, threads));
  };
  each_share([&](int s, int64_t r0, int64_t r1) {
    float* sum_g = partial + 2 * c_count * s;
    float* sum_gx = sum_g + c_count;
#if defined(__x86_64__)
    if (vector_channels > 0) sums_avx512(a, ch, r0, r1, vector_channels, sum_g, sum_gx);
#endif
    sums_plain(a, ch, r0, r1, vector_channels, sum_g, sum_gx);
  });
  const float inverse_rows = 1.f / static_cast<float>(std::max<int64_t>(a.rows, 1));
  for (int64_t c = 0; c < c_count; ++c) {
    float sum_g = 0, sum_gx = 0;
    for (int s = 0; s < threads; ++s) {
      sum_g += partial[2 * c_count * s + c];
      sum_gx += partial[2 * c_count * s + c_count + c];
    }
    a.dbeta[c] = sum_g;
    if (a.dgamma) a.dgamma[c] = sum_gx;
    mean_g[c] = sum_g * inverse_rows;
    mean_gx[c] = sum_gx * inverse_rows;
  }
  if (!a.dx) return;
  each_share([&](int, int64_t r0, int64_t r1) {
#if defined(__x86_64__)
    if (vector_channels > 0) dx_avx512(a, ch, r0, r1, vector_channels);
#endif
    dx_plain(a, ch, r0, r1, vector_channels);
  });
}

}  // namespace ic::cpu
