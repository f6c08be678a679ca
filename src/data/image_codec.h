// JPEG and PNG decoding to 8-bit RGB, and JPEG encoding, on libjpeg-turbo (TurboJPEG API) and
// libpng. Decoding follows TensorFlow's decode_jpeg(channels=3) / decode_png(channels=3):
// grayscale becomes RGB, CMYK/YCCK JPEGs are converted to RGB with TensorFlow's formula, PNGs of
// any bit depth and colour type become RGB8 (alpha dropped, as TensorFlow strips it).
// Every function is thread-safe (a decode makes its own decompressor; each thread keeps one
// TurboJPEG compressor).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ic {

// A pixel rectangle [y, y + height) x [x, x + width).
struct CropWindow {
  int y = 0, x = 0, height = 0, width = 0;
  bool operator==(const CropWindow&) const = default;
};

// An image as rows of interleaved R,G,B bytes: pixels[(y * width + x) * 3 + c].
struct RgbImage {
  int height = 0, width = 0;
  std::vector<uint8_t> pixels;  // [height, width, 3]
};

enum class ImageFormat { jpeg, png, unknown };

// Tells JPEG (FF D8 FF) from PNG (89 50 4E 47 0D 0A 1A 0A) by the first bytes, whatever the
// record's image/format says (ImageNet has a PNG named .JPEG).
ImageFormat sniff_image_format(std::string_view bytes);

struct JpegHeader {
  int height = 0, width = 0;
  int components = 0;    // 1 (gray), 3 (YCbCr/RGB) or 4 (CMYK/YCCK)
  bool is_cmyk = false;  // CMYK or YCCK colour space
};

// Reads the frame header only (cheap: no entropy decoding).
Result<JpegHeader> read_jpeg_header(std::string_view bytes);

// An image's size from its header alone (JPEG frame header, PNG IHDR chunk): no pixel data is
// decoded, so it is cheap whatever the image claims.
struct ImageDimensions {
  int height = 0, width = 0;
  int64_t pixels() const { return int64_t{height} * width; }
};
Result<ImageDimensions> read_image_dimensions(std::string_view bytes);

// The default of --max_image_pixels: 10000x10000, a 300 MB RGB decode per thread.
constexpr int64_t kDefaultMaxImagePixels = 100000000;

// A RESOURCE_EXHAUSTED error naming the dimensions when `size` is more than max_pixels pixels
// (decoding such an image would take height x width x 3 bytes and more); max_pixels <= 0 = no
// limit.
Status check_pixel_limit(ImageDimensions size, int64_t max_pixels);

// check_pixel_limit on the header's dimensions. Every decoder below applies the same check
// itself, from the header it reads before allocating anything for the pixels; callers use
// this one to refuse an image before other work (serve answers 413 from it).
Status check_image_pixels(std::string_view bytes, int64_t max_pixels);

// The JPEG scale denominators TurboJPEG can decode at (1/1, 1/2, 1/4, 1/8 are used here).
// Decoding at 1/d costs roughly 1/d^2 of the IDCT work; the scaled size is ceil(size / d).
inline int jpeg_scaled_size(int size, int scale_denom) {
  return (size + scale_denom - 1) / scale_denom;
}

// Decodes a JPEG or PNG into `out`, reusing its pixel buffer. For JPEG, `scale_denom` in
// {1, 2, 4, 8} decodes at 1/scale_denom of the size in the DCT domain (cheaper); PNGs are always
// decoded at full size (check out->height/width). A JPEG that decodes with only warnings (e.g.
// extraneous bytes) is accepted, as TensorFlow accepts it; one whose data is truncated or
// damaged (libjpeg would fill the rest with grey) is an error naming the damage.
// An image whose header claims more than max_pixels pixels (<= 0: no limit) is refused before
// any pixel memory is allocated: every decode has a limit unless its caller turns it off.
Status decode_image_into(std::string_view bytes, int scale_denom, RgbImage* out,
                         int64_t max_pixels = kDefaultMaxImagePixels);
Result<RgbImage> decode_image(std::string_view bytes, int scale_denom = 1,
                              int64_t max_pixels = kDefaultMaxImagePixels);

// Decodes only as much of the image as covers `wanted`, a rectangle of the image scaled by
// 1/scale_denom (clamped to it), into `out`, and sets `decoded` to the rectangle `out` holds, in
// the same coordinates (out->height == decoded->height, likewise width). Every pixel of `wanted`
// equals decode_image_into's. For a JPEG the rectangle is `wanted`'s rows, and its columns
// widened to the iMCU grid plus a pixel each side; rows below it are not even entropy-decoded,
// which makes a crop much cheaper to decode. PNGs and CMYK JPEGs are decoded whole (a PNG always
// at full size: `decoded` then covers the full-size image and scale_denom does not apply).
// max_pixels and damaged data as in decode_image_into.
Status decode_image_region_into(std::string_view bytes, int scale_denom, CropWindow wanted,
                                RgbImage* out, CropWindow* decoded,
                                int64_t max_pixels = kDefaultMaxImagePixels);

// Baseline JPEG, 4:2:0 chroma subsampling, quality in [1, 100].
Result<std::string> encode_jpeg(const RgbImage& image, int quality);

// 8-bit RGB PNG (used by tests and the converter's PNG fix-up checks).
Result<std::string> encode_png(const RgbImage& image);

}  // namespace ic
