#include "backend/cpu/depthwise_loops.h"

#include <algorithm>
#include <bit>

#include "backend/cpu/bf16_avx512.h"
#include "core/tensor.h"

namespace ic::cpu {

namespace {

// e^x: Cody and Waite's reduction x = n ln2 + r, |r| <= ln2 / 2, e^r by its Taylor series to
// r^5 (the next term is below 3e-6 of it), 2^n through the exponent bits. n is rounded by
// adding and subtracting 1.5 * 2^23 and read from the sum's bits (casting a NaN to int would
// be undefined). exp16 below computes the same steps on 16 lanes.
constexpr float kShifter = 12582912.f;  // 1.5 * 2^23
constexpr float kLog2e = 1.44269504f, kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
constexpr float kLowest = -87.f, kHighest = 88.f;  // e^x is a normal float between
constexpr float kTaylor[] = {1.f / 120.f, 1.f / 24.f, 1.f / 6.f, 0.5f, 1.f, 1.f};

float exp_scalar(float x) {
  x = x < kLowest ? kLowest : x;  // a NaN fails both tests and stays
  x = x > kHighest ? kHighest : x;
  const float shifted = x * kLog2e + kShifter;
  const float n = shifted - kShifter;
  const float r = (x - n * kLn2High) - n * kLn2Low;
  float p = kTaylor[0];
  for (int i = 1; i < 6; ++i) p = p * r + kTaylor[i];
  const uint32_t exponent =
      std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kShifter) + 127u;
  return p * std::bit_cast<float>(exponent << 23);
}

float activate_scalar(float v, DepthwiseActivation act) {
  switch (act) {
    case DepthwiseActivation::none: return v;
    case DepthwiseActivation::relu: return v < 0.f ? 0.f : v;
    case DepthwiseActivation::relu6: return v < 0.f ? 0.f : v > 6.f ? 6.f : v;
    case DepthwiseActivation::sigmoid: return 1.f / (1.f + exp_scalar(-v));
    case DepthwiseActivation::swish: return v / (1.f + exp_scalar(-v));
  }
  return v;
}

// Where channel c sits in a packed row of `channels` (pack_depthwise).
int64_t packed_index(int64_t c, int64_t channels) {
  if (c >= channels / 32 * 32) return c;
  const int64_t i = c % 32;
  return c - i + (i % 2) * 16 + i / 2;
}

// Where the taps of output pixel (oh, ow) fall inside the image.
struct Window {
  int64_t ih0, iw0;  // the top-left tap's input position (negative in the padding)
  int kh_begin, kh_end, kw_begin, kw_end;
};

inline Window window(const DepthwiseGeometry& g, int64_t oh, int64_t ow) {
  Window t;
  t.ih0 = oh * g.stride_h - g.pad_top;
  t.iw0 = ow * g.stride_w - g.pad_left;
  t.kh_begin = static_cast<int>(std::max<int64_t>(0, -t.ih0));
  t.kh_end = static_cast<int>(std::min<int64_t>(g.kernel_h, g.in_h - t.ih0));
  t.kw_begin = static_cast<int>(std::max<int64_t>(0, -t.iw0));
  t.kw_end = static_cast<int>(std::min<int64_t>(g.kernel_w, g.in_w - t.iw0));
  return t;
}

// Channels [c0, channels) of one output pixel, one at a time: those that fill no vector, and
// all of them where the CPU has no AVX-512.
void pixel_scalar(const uint16_t* x, const float* w, const float* bias, const DepthwiseGeometry& g,
                  const Window& t, int64_t c0, DepthwiseActivation act, uint16_t* out) {
  const int64_t channels = g.channels;
  for (int64_t c = c0; c < channels; ++c) {
    const int64_t packed = packed_index(c, channels);
    float sum = bias[packed];
    for (int kh = t.kh_begin; kh < t.kh_end; ++kh)
      for (int kw = t.kw_begin; kw < t.kw_end; ++kw)
        sum += bf16_to_float(x[((t.ih0 + kh) * g.in_w + t.iw0 + kw) * channels + c]) *
               w[(int64_t{kh} * g.kernel_w + kw) * channels + packed];
    out[c] = float_to_bf16(activate_scalar(sum, act));
  }
}

#if defined(__x86_64__)
using avx512::load16;
using avx512::load32;
using avx512::store16;
using avx512::store32;

IC_AVX512_INLINE __m512 exp16(__m512 x) {
  // min/max return their second operand when either is NaN: x, so a NaN stays.
  x = _mm512_max_ps(_mm512_set1_ps(kLowest), _mm512_min_ps(_mm512_set1_ps(kHighest), x));
  const __m512 shifter = _mm512_set1_ps(kShifter);
  const __m512 shifted = _mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), shifter);
  const __m512 n = _mm512_sub_ps(shifted, shifter);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2High), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Low), r);
  __m512 p = _mm512_set1_ps(kTaylor[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kTaylor[i]));
  const __m512i exponent =
      _mm512_add_epi32(_mm512_sub_epi32(_mm512_castps_si512(shifted), _mm512_castps_si512(shifter)),
                       _mm512_set1_epi32(127));
  return _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(exponent, 23)));
}

// 1 / d for d >= 1: the 14-bit estimate, ample before rounding to bf16's 8 bits; where 1 / d
// is below the smallest normal float it is 0.
IC_AVX512_INLINE __m512 reciprocal16(__m512 d) { return _mm512_rcp14_ps(d); }

IC_AVX512_INLINE __m512 activate16(__m512 v, DepthwiseActivation act) {
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.f);
  switch (act) {
    case DepthwiseActivation::none: return v;
    case DepthwiseActivation::relu: return _mm512_max_ps(zero, v);  // a NaN stays, as above
    case DepthwiseActivation::relu6:
      return _mm512_min_ps(_mm512_set1_ps(6.f), _mm512_max_ps(zero, v));
    case DepthwiseActivation::sigmoid:
      return reciprocal16(_mm512_add_ps(one, exp16(_mm512_sub_ps(zero, v))));
    case DepthwiseActivation::swish:
      return _mm512_mul_ps(v, reciprocal16(_mm512_add_ps(one, exp16(_mm512_sub_ps(zero, v)))));
  }
  return v;
}

// 16 channels in their stored order.
struct Natural16 {
  static constexpr int kVectors = 1;
  IC_AVX512_INLINE static void load(const float* p, __m512* v) { v[0] = _mm512_loadu_ps(p); }
  IC_AVX512_INLINE static void widen(const uint16_t* p, __m512* v) { v[0] = load16(p); }
  IC_AVX512_INLINE static void store(uint16_t* p, const __m512* v) { store16(p, v[0]); }
};

// 32 channels as their even and odd halves (pack_depthwise): a 32-bit lane of activations
// holds an even channel in its low half and the next odd one in its high half.
struct Packed32 {
  static constexpr int kVectors = 2;
  IC_AVX512_INLINE static void load(const float* p, __m512* v) {
    v[0] = _mm512_loadu_ps(p);
    v[1] = _mm512_loadu_ps(p + 16);
  }
  IC_AVX512_INLINE static void widen(const uint16_t* p, __m512* v) { load32(p, v[0], v[1]); }
  IC_AVX512_INLINE static void store(uint16_t* p, const __m512* v) { store32(p, v[0], v[1]); }
};

// The sums of `pixels` output pixels for one block of channels, from the bias.
template <class Block, int pixels>
IC_AVX512_INLINE void start_sums(const float* bias, __m512 (&sum)[pixels][Block::kVectors]) {
  __m512 b[Block::kVectors];
  Block::load(bias, b);
  for (int p = 0; p < pixels; ++p)
    for (int i = 0; i < Block::kVectors; ++i) sum[p][i] = b[i];
}

// Activates the sums and stores them, pixel p at out + p * channels.
template <class Block, int pixels>
IC_AVX512_INLINE void finish_sums(__m512 (&sum)[pixels][Block::kVectors], DepthwiseActivation act,
                                  int64_t channels, uint16_t* out) {
  for (int p = 0; p < pixels; ++p) {
    for (int i = 0; i < Block::kVectors; ++i) sum[p][i] = activate16(sum[p][i], act);
    Block::store(out + p * channels, sum[p]);
  }
}

// The sums of `pixels` neighbouring output pixels for one block of channels at c (t: the first
// pixel's window), activated and stored. `width` and `stride` are the kernel's, as constants
// so that the loops unroll: each input column of the pixels' span is widened once and
// multiplied into every sum whose window holds it. The widening and the multiply-adds compete
// for the same two ports, so widening each value once is most of the speed; the pixels' sums
// are independent chains, so their multiply-adds overlap instead of waiting out each other's
// latency.
template <int pixels, int width, int stride>
struct SpanSums {
  template <class Block>
  IC_AVX512_INLINE static void run(const uint16_t* x, const float* w, const float* bias,
                                   const DepthwiseGeometry& g, const Window& t, int64_t c,
                                   DepthwiseActivation act, uint16_t* out) {
    constexpr int span = (pixels - 1) * stride + width, V = Block::kVectors;
    const int64_t channels = g.channels;
    // The span's columns inside the image: the padding's contribute nothing.
    const int64_t j_begin = std::max<int64_t>(0, -t.iw0);
    const int64_t j_end = std::min<int64_t>(span, g.in_w - t.iw0);
    __m512 sum[pixels][V], weight[width][V], v[V];
    start_sums<Block, pixels>(bias + c, sum);
    for (int kh = t.kh_begin; kh < t.kh_end; ++kh) {
      const uint16_t* in = x + ((t.ih0 + kh) * g.in_w + t.iw0) * channels + c;
      const float* tap = w + int64_t{kh} * width * channels + c;
      for (int k = 0; k < width; ++k) Block::load(tap + k * channels, weight[k]);
#pragma GCC unroll 16
      for (int j = 0; j < span; ++j) {
        if (j < j_begin || j >= j_end) continue;
        Block::widen(in + j * channels, v);
#pragma GCC unroll 8
        for (int p = 0; p < pixels; ++p) {
          const int k = j - p * stride;
          if (k < 0 || k >= width) continue;
          for (int i = 0; i < V; ++i) sum[p][i] = _mm512_fmadd_ps(v[i], weight[k][i], sum[p][i]);
        }
      }
    }
    finish_sums<Block, pixels>(sum, act, channels, out + c);
  }
};

// The same for any kernel size, one tap at a time: with more than one pixel, their windows
// must lie inside the image along w.
template <int pixels>
struct TapSums {
  template <class Block>
  IC_AVX512_INLINE static void run(const uint16_t* x, const float* w, const float* bias,
                                   const DepthwiseGeometry& g, const Window& t, int64_t c,
                                   DepthwiseActivation act, uint16_t* out) {
    constexpr int V = Block::kVectors;
    const int64_t channels = g.channels, step = g.stride_w * channels;
    __m512 sum[pixels][V], weight[V], v[V];
    start_sums<Block, pixels>(bias + c, sum);
    for (int kh = t.kh_begin; kh < t.kh_end; ++kh) {
      const uint16_t* in = x + ((t.ih0 + kh) * g.in_w + t.iw0) * channels + c;
      const float* tap = w + int64_t{kh} * g.kernel_w * channels + c;
      for (int kw = t.kw_begin; kw < t.kw_end; ++kw) {
        Block::load(tap + kw * channels, weight);
        for (int p = 0; p < pixels; ++p) {
          Block::widen(in + p * step + kw * channels, v);
          for (int i = 0; i < V; ++i) sum[p][i] = _mm512_fmadd_ps(v[i], weight[i], sum[p][i]);
        }
      }
    }
    finish_sums<Block, pixels>(sum, act, channels, out + c);
  }
};

// Every vector's worth of channels of some output pixels, by Sums (SpanSums or TapSums): the
// whole blocks of 32 packed, then a block of 16 in stored order. Returns where the vectors end:
// the last channels (fewer than 16) are the caller's.
template <class Sums>
IC_AVX512 int64_t vector_channels(const uint16_t* x, const float* w, const float* bias,
                                  const DepthwiseGeometry& g, const Window& t,
                                  DepthwiseActivation act, uint16_t* out) {
  const int64_t whole32 = g.channels / 32 * 32, whole16 = g.channels / 16 * 16;
  for (int64_t c = 0; c < whole32; c += 32)
    Sums::template run<Packed32>(x, w, bias, g, t, c, act, out);
  if (whole16 > whole32) Sums::template run<Natural16>(x, w, bias, g, t, whole32, act, out);
  return whole16;
}

// The last channels of `pixels` output pixels from `vector_end`, one at a time.
void scalar_tail(const uint16_t* x, const float* w, const float* bias, const DepthwiseGeometry& g,
                 int64_t oh, int64_t ow, int64_t pixels, int64_t vector_end,
                 DepthwiseActivation act, uint16_t* y) {
  if (vector_end == g.channels) return;
  for (int64_t p = ow; p < ow + pixels; ++p)
    pixel_scalar(x, w, bias, g, window(g, oh, p), vector_end, act, y + p * g.channels);
}

// A row of a kernel `width` wide at `stride`, in groups of up to 4 pixels.
template <int width, int stride>
IC_AVX512 void span_row(const uint16_t* x, const float* w, const float* bias,
                        const DepthwiseGeometry& g, int64_t oh, DepthwiseActivation act,
                        uint16_t* y) {
  // The group sizes' instances, by pixels - 1: a row ends with a group of fewer than 4.
  constexpr decltype(&vector_channels<SpanSums<4, width, stride>>) groups[] = {
      &vector_channels<SpanSums<1, width, stride>>, &vector_channels<SpanSums<2, width, stride>>,
      &vector_channels<SpanSums<3, width, stride>>, &vector_channels<SpanSums<4, width, stride>>};
  for (int64_t ow = 0; ow < g.out_w;) {
    const int64_t pixels = std::min<int64_t>(4, g.out_w - ow);
    const int64_t vector_end =
        groups[pixels - 1](x, w, bias, g, window(g, oh, ow), act, y + ow * g.channels);
    scalar_tail(x, w, bias, g, oh, ow, pixels, vector_end, act, y);
    ow += pixels;
  }
}

// A row of any other kernel: groups of 4 pixels where their windows lie inside the image along
// w, else one pixel at a time.
IC_AVX512 void any_row(const uint16_t* x, const float* w, const float* bias,
                       const DepthwiseGeometry& g, int64_t oh, DepthwiseActivation act,
                       uint16_t* y) {
  for (int64_t ow = 0; ow < g.out_w;) {
    const Window t = window(g, oh, ow);
    uint16_t* out = y + ow * g.channels;
    const bool group =
        ow + 4 <= g.out_w && t.kw_begin == 0 && window(g, oh, ow + 3).kw_end == g.kernel_w;
    const int64_t pixels = group ? 4 : 1;
    const int64_t vector_end = group ? vector_channels<TapSums<4>>(x, w, bias, g, t, act, out)
                                     : vector_channels<TapSums<1>>(x, w, bias, g, t, act, out);
    scalar_tail(x, w, bias, g, oh, ow, pixels, vector_end, act, y);
    ow += pixels;
  }
}

IC_AVX512 void row_avx512(const uint16_t* x, const float* w, const float* bias,
                          const DepthwiseGeometry& g, int64_t oh, DepthwiseActivation act,
                          uint16_t* y) {
  if (g.kernel_h == g.kernel_w) {
    switch (g.kernel_w * 10 + g.stride_w) {
      case 31: return span_row<3, 1>(x, w, bias, g, oh, act, y);
      case 32: return span_row<3, 2>(x, w, bias, g, oh, act, y);
      case 51: return span_row<5, 1>(x, w, bias, g, oh, act, y);
      case 52: return span_row<5, 2>(x, w, bias, g, oh, act, y);
      default: break;
    }
  }
  any_row(x, w, bias, g, oh, act, y);
}

#endif

}  // namespace

float exp_approx(float x) { return exp_scalar(x); }

void pack_depthwise(const float* natural, int64_t taps, int64_t channels, float* packed) {
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t c = 0; c < channels; ++c)
      packed[t * channels + packed_index(c, channels)] = natural[t * channels + c];
}

void depthwise_row_bf16(const uint16_t* x, const float* w, const float* bias,
                        const DepthwiseGeometry& g, int64_t oh, DepthwiseActivation act,
                        uint16_t* y) {
#if defined(__x86_64__)
  if (avx512::available()) return row_avx512(x, w, bias, g, oh, act, y);
#endif
  for (int64_t ow = 0; ow < g.out_w; ++ow)
    pixel_scalar(x, w, bias, g, window(g, oh, ow), 0, act, y + ow * g.channels);
}

}  // namespace ic::cpu
