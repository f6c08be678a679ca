// Decoding part of a JPEG with libjpeg-turbo's libjpeg API (the TurboJPEG API cannot crop):
// rows above the region are skipped (entropy-decoded only), rows below are never read, and
// columns outside it are not inverse-transformed, upsampled or colour-converted
// (jpeg_skip_scanlines / jpeg_crop_scanline). Used by decode_image_region_into in image_codec.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "data/image_codec.h"

namespace ic::jpeg_region {

enum class Outcome {
  decoded,  // `out` holds the region
  not_rgb,  // a CMYK/YCCK JPEG: nothing decoded, use the full-image path
  failed,   // `message` says why
};

// Decodes a rectangle covering `wanted` (pixels of the image scaled by 1/scale_denom, clamped to
// it) into `out`, with the same settings as decode_image_into (fast integer IDCT, fancy
// upsampling, RGB): every pixel of `wanted` equals the full decode's. The rectangle actually
// decoded, in the same coordinates, goes to `decoded`: it is wider than `wanted` (iMCU-aligned
// left edge, one pixel of margin each side) and as tall. A truncated stream is an error as in
// the full decode, even when the region ends before the cut.
Outcome decode(std::string_view bytes, int scale_denom, CropWindow wanted, RgbImage* out,
               CropWindow* decoded, std::string* message);

}  // namespace ic::jpeg_region
