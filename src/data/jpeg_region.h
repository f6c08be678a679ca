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
  decoded,           // `out` holds the region
  not_rgb,           // a CMYK/YCCK JPEG: nothing decoded, use the full-image path
  over_pixel_limit,  // the frame header claims more than max_pixels: nothing allocated
  failed,            // `message` says why
};

// Whether a libjpeg warning (a JWRN_* code) means the image's data is missing or damaged: a
// premature end of the file or of a data segment, a bad Huffman or arithmetic code, a lost
// restart marker. libjpeg fills what it could not decode with grey and goes on; we refuse
// the image. Other warnings (extraneous bytes between markers, a bad ICC or JFIF marker, an
// unknown Adobe transform) leave the pixels intact and are accepted, as TensorFlow accepts them.
bool is_damage_warning(int msg_code);

// Decodes a rectangle covering `wanted` (pixels of the image scaled by 1/scale_denom, clamped to
// it) into `out`, with the same settings as decode_image_into (fast integer IDCT, fancy
// upsampling, RGB): every pixel of `wanted` equals the full decode's. The rectangle actually
// decoded, in the same coordinates, goes to `decoded`: it is wider than `wanted` (iMCU-aligned
// left edge, one pixel of margin each side) and as tall. A truncated stream is an error as in
// the full decode, even when the region ends before the cut; a damage warning while the
// region's rows are read is an error too (rows below the region are not read when the stream
// ends with its EOI marker, so damage there is not seen; a progressive JPEG's scans are all read
// first, so any damage in them is seen). The decode is at full width when libjpeg would smooth
// the blocks of an incomplete progressive JPEG (a crop would change the smoothing at its edges).
// The frame header is checked against max_pixels (<= 0: no limit) before libjpeg allocates
// anything for the image.
Outcome decode(std::string_view bytes, int scale_denom, CropWindow wanted, int64_t max_pixels,
               RgbImage* out, CropWindow* decoded, std::string* message);

// Entropy-decodes the whole stream (at 1/8 scale, one output row kept) only to see libjpeg's
// warnings: false with the first damage warning in `message` when the data is damaged. Any
// colour space. Used by the full decode, whose TurboJPEG API reports only the last warning.
bool stream_is_intact(std::string_view bytes, std::string* message);

}  // namespace ic::jpeg_region
