#include "data/color_ops.h"

#include <algorithm>
#include <cmath>

namespace ic {
namespace {

// TensorFlow's internal::rgb_to_hsv (adjust_saturation_op.cc), float arithmetic kept: h in
// [0, 1), 0 for greys; the 2/6 and 4/6 sector offsets are double constants there, so the sum is
// formed in double and rounded to float once, as in the kernel.
void rgb_to_hsv(float r, float g, float b, float* h, float* s, float* v) {
  const float vv = std::max(r, std::max(g, b));
  const float range = vv - std::min(r, std::min(g, b));
  *s = vv > 0 ? range / vv : 0.0f;
  float hh = 0;
  // The kernel computes 1 / (6 * range) unconditionally and discards the hue when range <= 0;
  // skipping it gives the same value without dividing by zero.
  if (range > 0) {
    const float norm = 1.0f / (6.0f * range);
    if (r == vv) {
      hh = norm * (g - b);
    } else if (g == vv) {
      hh = static_cast<float>(norm * (b - r) + 2.0 / 6.0);
    } else {
      hh = static_cast<float>(norm * (r - g) + 4.0 / 6.0);
    }
    if (hh < 0.0f) hh = hh + 1;
  }
  *v = vv;
  *h = hh;
}

// TensorFlow's internal::hsv_to_rgb: chroma c = s * v, the sector int(6h), the secondary
// component from 6h folded into [0, 2). A hue of exactly 1 (sector 6) gives grey, as there.
void hsv_to_rgb(float h, float s, float v, float* r, float* g, float* b) {
  const float c = s * v;
  const float m = v - c;
  const float dh = h * 6;
  const int sector = static_cast<int>(dh);
  float fmodu = dh;
  while (fmodu <= 0) fmodu += 2.0f;
  while (fmodu >= 2.0f) fmodu -= 2.0f;
  const float x = c * (1 - std::abs(fmodu - 1));
  float rr = 0, gg = 0, bb = 0;
  switch (sector) {
    case 0: rr = c, gg = x, bb = 0; break;
    case 1: rr = x, gg = c, bb = 0; break;
    case 2: rr = 0, gg = c, bb = x; break;
    case 3: rr = 0, gg = x, bb = c; break;
    case 4: rr = x, gg = 0, bb = c; break;
    case 5: rr = c, gg = 0, bb = x; break;
    default: break;
  }
  *r = rr + m;
  *g = gg + m;
  *b = bb + m;
}

}  // namespace

void adjust_saturation_pixel(float* rgb, float factor) {
  float h, s, v;
  rgb_to_hsv(rgb[0], rgb[1], rgb[2], &h, &s, &v);
  s = std::min(1.0f, std::max(0.0f, s * factor));
  hsv_to_rgb(h, s, v, &rgb[0], &rgb[1], &rgb[2]);
}

void apply_slim_color_distortion(const SlimColorDistortion& distortion, float* pixels,
                                 size_t pixel_count) {
  const float delta = distortion.brightness_delta;
  const float factor = distortion.saturation_factor;
  const bool brightness_first = distortion.ordering == 0;
  for (size_t i = 0; i < pixel_count; ++i) {
    float* p = pixels + 3 * i;
    if (brightness_first) {
      for (int c = 0; c < 3; ++c) p[c] += delta;
      adjust_saturation_pixel(p, factor);
    } else {
      adjust_saturation_pixel(p, factor);
      for (int c = 0; c < 3; ++c) p[c] += delta;
    }
    // "The random_* ops do not necessarily clamp."
    for (int c = 0; c < 3; ++c) p[c] = std::clamp(p[c], 0.0f, 1.0f);
  }
}

}  // namespace ic
