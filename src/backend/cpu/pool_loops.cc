// pool_loops.h's loops. Forward splits the output rows of the batch between threads; backward
// splits the images, each thread zeroing an image's dx rows just before the first window that
// adds to them (while they are still in the cache) and adding every window's share in output
// order, so the sums are the same from run to run. The AVX2 paths and the plain ones (channels
// past the last multiple of 8, CPUs without AVX2) compute the same values in the same order.
#include "backend/cpu/pool_loops.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "backend/cpu/cpu_common.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define IC_AVX2 __attribute__((target("avx2")))
#endif

namespace ic::cpu {
namespace {

// Output pixel (oh, ow)'s window: its first row and column (before clipping: they may lie in
// the padding), and the rows [r0, r1) and columns [c0, c1) of it inside the input.
struct Window {
  int64_t top, left, r0, r1, c0, c1;
};

Window window(const PoolLoopShape& s, int64_t oh, int64_t ow) {
  Window win;
  win.top = oh * s.stride_h - s.top;
  win.left = ow * s.stride_w - s.left;
  win.r0 = std::max<int64_t>(win.top, 0);
  win.r1 = std::min<int64_t>(win.top + s.kernel_h, s.h);
  win.c0 = std::max<int64_t>(win.left, 0);
  win.c1 = std::min<int64_t>(win.left + s.kernel_w, s.w);
  return win;
}

int position(const PoolLoopShape& s, const Window& win, int64_t r, int64_t col) {
  return static_cast<int>((r - win.top) * s.kernel_w + (col - win.left));
}

// Where a window whose inputs are all -inf or NaN puts its maximum: on a real input, so that
// backward never adds into the padding.
int first_real(const PoolLoopShape& s, const Window& win) {
  return position(s, win, win.r0, win.c0);
}

float real_inputs(const Window& win) {
  return static_cast<float>((win.r1 - win.r0) * (win.c1 - win.c0));
}

bool has_avx2() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

// Channels [c_begin, c) of one output pixel; x is the image, y and argmax the pixel's.
void max_pixel_plain(const PoolLoopShape& s, const float* x, const Window& win, int64_t c_begin,
                     float* y, uint8_t* argmax) {
  for (int64_t c = c_begin; c < s.c; ++c) {
    float best = -std::numeric_limits<float>::infinity();
    int at = first_real(s, win);
    for (int64_t r = win.r0; r < win.r1; ++r)
      for (int64_t col = win.c0; col < win.c1; ++col) {
        const float v = x[(r * s.w + col) * s.c + c];
        if (v > best) {
          best = v;
          at = position(s, win, r, col);
        }
      }
    y[c] = best;
    if (argmax) argmax[c] = static_cast<uint8_t>(at);
  }
}

void avg_pixel_plain(const PoolLoopShape& s, const float* x, const Window& win, int64_t c_begin,
                     float* y) {
  const float count = real_inputs(win);
  for (int64_t c = c_begin; c < s.c; ++c) {
    float sum = 0;
    for (int64_t r = win.r0; r < win.r1; ++r)
      for (int64_t col = win.c0; col < win.c1; ++col) sum += x[(r * s.w + col) * s.c + c];
    y[c] = sum / count;
  }
}

// One output pixel's gradient dy added into the image's dx, channels [c_begin, c).
void max_grad_plain(const PoolLoopShape& s, const float* dy, const uint8_t* argmax,
                    const Window& win, int64_t c_begin, float* dx) {
  for (int64_t c = c_begin; c < s.c; ++c) {
    const int64_t r = win.top + argmax[c] / s.kernel_w, col = win.left + argmax[c] % s.kernel_w;
    dx[(r * s.w + col) * s.c + c] += dy[c];
  }
}

void avg_grad_plain(const PoolLoopShape& s, const float* dy, const Window& win, int64_t c_begin,
                    float* dx) {
  const float count = real_inputs(win);
  for (int64_t c = c_begin; c < s.c; ++c) {
    const float share = dy[c] / count;
    for (int64_t r = win.r0; r < win.r1; ++r)
      for (int64_t col = win.c0; col < win.c1; ++col) dx[(r * s.w + col) * s.c + c] += share;
  }
}

#if defined(__x86_64__)
// The plain loops above on channels [0, vector_c), 8 at a time.
IC_AVX2 void max_pixel_avx2(const PoolLoopShape& s, const float* x, const Window& win,
                            int64_t vector_c, float* y, uint8_t* argmax) {
  // Each 32-bit lane's low byte, gathered into the vector's first 8 bytes.
  const __m256i low_bytes =
      _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i first_dwords = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
  for (int64_t c = 0; c < vector_c; c += 8) {
    __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256i at = _mm256_set1_epi32(first_real(s, win));
    for (int64_t r = win.r0; r < win.r1; ++r)
      for (int64_t col = win.c0; col < win.c1; ++col) {
        const __m256 v = _mm256_loadu_ps(x + (r * s.w + col) * s.c + c);
        const __m256 greater = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, v, greater);
        at = _mm256_blendv_epi8(at, _mm256_set1_epi32(position(s, win, r, col)),
                                _mm256_castps_si256(greater));
      }
    _mm256_storeu_ps(y + c, best);
    if (argmax) {
      const __m256i bytes =
          _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(at, low_bytes), first_dwords);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(argmax + c), _mm256_castsi256_si128(bytes));
    }
  }
}

IC_AVX2 void avg_pixel_avx2(const PoolLoopShape& s, const float* x, const Window& win,
                            int64_t vector_c, float* y) {
  const __m256 count = _mm256_set1_ps(real_inputs(win));
  for (int64_t c = 0; c < vector_c; c += 8) {
    __m256 sum = _mm256_setzero_ps();
    for (int64_t r = win.r0; r < win.r1; ++r)
      for (int64_t col = win.c0; col < win.c1; ++col)
        sum = _mm256_add_ps(sum, _mm256_loadu_ps(x + (r * s.w + col) * s.c + c));
    _mm256_storeu_ps(y + c, _mm256_div_ps(sum, count));
  }
}

// Adds dy where the position matches (a masked add: the other positions get + 0).
IC_AVX2 void max_grad_avx2(const PoolLoopShape& s, const float* dy, const uint8_t* argmax,
                           const Window& win, int64_t vector_c, float* dx) {
  for (int64_t c = 0; c < vector_c; c += 8) {
    const __m256 g = _mm256_loadu_ps(dy + c);
    const __m256i at =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(argmax + c)));
    for (int64_t r = win.r0; r < win.r1; ++r)
      for (int64_t col = win.c0; col < win.c1; ++col) {
        const __m256i here = _mm256_cmpeq_epi32(at, _mm256_set1_epi32(position(s, win, r, col)));
        float* p = dx + (r * s.w + col) * s.c + c;
        _mm256_storeu_ps(
            p, _mm256_add_ps(_mm256_loadu_ps(p), _mm256_and_ps(g, _mm256_castsi256_ps(here))));
      }
  }
}

IC_AVX2 void avg_grad_avx2(const PoolLoopShape& s, const float* dy, const Window& win,
                           int64_t vector_c, float* dx) {
  const __m256 count = _mm256_set1_ps(real_inputs(win));
  for (int64_t c = 0; c < vector_c; c += 8) {
    const __m256 share = _mm256_div_ps(_mm256_loadu_ps(dy + c), count);
    for (int64_t r = win.r0; r < win.r1; ++r)
      for (int64_t col = win.c0; col < win.c1; ++col) {
        float* p = dx + (r * s.w + col) * s.c + c;
        _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), share));
      }
  }
}
#endif

// The channels the AVX2 paths take: the multiples of 8, where the CPU has AVX2.
int64_t vector_channels(const PoolLoopShape& s) { return has_avx2() ? s.c / 8 * 8 : 0; }

// Runs pixel(x_image, window, y_pixel offset) over every output pixel, output rows split
// between threads.
template <typename Pixel>
void each_output_pixel(const PoolLoopShape& s, Pixel pixel) {
  parallel_for(s.n * s.out_h, 1, [&](int64_t row) {
    const int64_t n = row / s.out_h, oh = row % s.out_h;
    for (int64_t ow = 0; ow < s.out_w; ++ow)
      pixel(n * s.h * s.w * s.c, window(s, oh, ow), (row * s.out_w + ow) * s.c);
  });
}

// Runs grad(dx_image, window, dy_pixel offset) over every output pixel, images split between
// threads; each dx row is zeroed before the first window that reaches it adds to it.
template <typename Grad>
void each_output_grad(const PoolLoopShape& s, float* dx, Grad grad) {
  const int64_t row_floats = s.w * s.c;
  parallel_for(s.n, 1, [&](int64_t n) {
    float* image = dx + n * s.h * row_floats;
    int64_t zeroed = 0;  // rows [0, zeroed) of the image are zero or hold sums
    auto zero_until = [&](int64_t row) {
      if (row <= zeroed) return;
      std::memset(image + zeroed * row_floats, 0, sizeof(float) * (row - zeroed) * row_floats);
      zeroed = row;
    };
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      zero_until(std::min<int64_t>(oh * s.stride_h - s.top + s.kernel_h, s.h));
      for (int64_t ow = 0; ow < s.out_w; ++ow)
        grad(image, window(s, oh, ow), ((n * s.out_h + oh) * s.out_w + ow) * s.c);
    }
    zero_until(s.h);  // rows no window reaches
  });
}

}  // namespace

PoolLoopShape pool_loop_shape(const Pool2dDesc& d) {
  PoolLoopShape s;
  static_cast<PoolWindows&>(s) = pool_windows(d);
  s.n = d.input.n();
  s.h = d.input.h();
  s.w = d.input.w();
  s.c = d.input.c();
  return s;
}

bool pool_loops_apply(const Pool2dDesc& d) {
  return d.activations == DType::f32 && d.kernel_h * d.kernel_w <= 255 && !onednn_runs_avx512();
}

void max_pool_forward(const PoolLoopShape& s, const float* x, float* y, uint8_t* argmax) {
  const int64_t vector_c = vector_channels(s);
  each_output_pixel(s, [&](int64_t image, const Window& win, int64_t at) {
    uint8_t* positions = argmax ? argmax + at : nullptr;
#if defined(__x86_64__)
    if (vector_c > 0) max_pixel_avx2(s, x + image, win, vector_c, y + at, positions);
#endif
    max_pixel_plain(s, x + image, win, vector_c, y + at, positions);
  });
}

void avg_pool_forward(const PoolLoopShape& s, const float* x, float* y) {
  const int64_t vector_c = vector_channels(s);
  each_output_pixel(s, [&](int64_t image, const Window& win, int64_t at) {
#if defined(__x86_64__)
    if (vector_c > 0) avg_pixel_avx2(s, x + image, win, vector_c, y + at);
#endif
    avg_pixel_plain(s, x + image, win, vector_c, y + at);
  });
}

void max_pool_backward(const PoolLoopShape& s, const float* dy, const uint8_t* argmax, float* dx) {
  const int64_t vector_c = vector_channels(s);
  each_output_grad(s, dx, [&](float* image, const Window& win, int64_t at) {
#if defined(__x86_64__)
    if (vector_c > 0) max_grad_avx2(s, dy + at, argmax + at, win, vector_c, image);
#endif
    max_grad_plain(s, dy + at, argmax + at, win, vector_c, image);
  });
}

void avg_pool_backward(const PoolLoopShape& s, const float* dy, float* dx) {
  const int64_t vector_c = vector_channels(s);
  each_output_grad(s, dx, [&](float* image, const Window& win, int64_t at) {
#if defined(__x86_64__)
    if (vector_c > 0) avg_grad_avx2(s, dy + at, win, vector_c, image);
#endif
    avg_grad_plain(s, dy + at, win, vector_c, image);
  });
}

}  // namespace ic::cpu
