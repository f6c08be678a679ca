// JPEG and PNG decoding (data/image_codec.h, data/jpeg_region.h) and the converter's
// prepare_image. The first kPrefix bytes choose what to do, the rest is the image:
//   byte 0: bits 0-1 the JPEG scale 1/1, 1/2, 1/4, 1/8; bits 2-3 the call (full decode, crop
//           window decode, converter's prepare_image, header only)
//   bytes 1-8: the crop window y, x, height, width as little-endian int16 (negative and
//           out-of-image values test the clamping)
// A crop window decode must agree with the full decode on every pixel of the window. Every
// call gets the harness's pixel limit (image_limits.h), which the decoders apply from the header
// before allocating: an image claiming more must be refused, never decoded.
#include <cstdint>
#include <cstring>

#include "data/image_codec.h"
#include "data/imagenet_converter.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/image_limits.h"

namespace {

constexpr size_t kPrefix = 9;

int16_t get_i16(const uint8_t* p) {
  return static_cast<int16_t>(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kPrefix) return 0;
  const int scale_denom = 1 << (data[0] & 3);
  const int call = (data[0] >> 2) & 3;
  const ic::CropWindow wanted{get_i16(data + 1), get_i16(data + 3), get_i16(data + 5),
                              get_i16(data + 7)};
  const std::string_view image = ic::fuzz::as_view(data + kPrefix, size - kPrefix);
  const int64_t limit = ic::fuzz::kMaxImagePixels;
  const bool over_limit = ic::fuzz::claimed_pixels(image) > limit;
  // A decode that succeeds on an image over the limit broke the decoders' promise.
  auto check_refused = [&](bool ok) {
    if (ok && over_limit) ic::fuzz::check_failed("decoded an image over the pixel limit");
  };

  switch (call) {
    case 0: {
      ic::Result<ic::RgbImage> full = ic::decode_image(image, scale_denom, limit);
      check_refused(full.ok());
      if (full.ok() && full->pixels.size() != static_cast<size_t>(full->height) * full->width * 3) {
        ic::fuzz::check_failed("full decode: pixel count is not height * width * 3");
      }
      break;
    }
    case 1: {
      ic::RgbImage region;
      ic::CropWindow decoded;
      const bool ok =
          ic::decode_image_region_into(image, scale_denom, wanted, &region, &decoded, limit).ok();
      check_refused(ok);
      if (!ok) break;
      if (region.height != decoded.height || region.width != decoded.width ||
          region.pixels.size() != static_cast<size_t>(region.height) * region.width * 3) {
        ic::fuzz::check_failed("region decode: size disagrees with the decoded window");
      }
      // The region is a window of the full decode at the same scale (PNGs: full size).
      const bool png = ic::sniff_image_format(image) == ic::ImageFormat::png;
      ic::Result<ic::RgbImage> full = ic::decode_image(image, png ? 1 : scale_denom, limit);
      if (!full.ok()) break;  // the full decode reads to the end and may fail where a crop did not
      if (decoded.y < 0 || decoded.x < 0 || decoded.y + decoded.height > full->height ||
          decoded.x + decoded.width > full->width) {
        ic::fuzz::check_failed("region decode: decoded window outside the full image");
      }
      for (int y = 0; y < decoded.height; ++y) {
        const uint8_t* want = full->pixels.data() +
                              (static_cast<size_t>(decoded.y + y) * full->width + decoded.x) * 3;
        const uint8_t* got = region.pixels.data() + static_cast<size_t>(y) * decoded.width * 3;
        // The window's outer columns may differ (libjpeg treats them as edges); `wanted` is
        // what must match, and it lies one column inside them unless at the image edge.
        for (int x = 0; x < decoded.width; ++x) {
          const int column = decoded.x + x;
          if (column < wanted.x || column >= wanted.x + wanted.width) continue;
          if (std::memcmp(want + 3 * x, got + 3 * x, 3) != 0) {
            ic::fuzz::check_failed("region decode: a wanted pixel differs from the full decode");
          }
        }
      }
      break;
    }
    case 2: {
      ic::Result<ic::PreparedImage> prepared = ic::prepare_image(image, (data[0] & 16) != 0, limit);
      check_refused(prepared.ok());
      if (prepared.ok() && ic::sniff_image_format(prepared->encoded) != ic::ImageFormat::jpeg) {
        ic::fuzz::check_failed("prepare_image: what goes into a record must be a JPEG");
      }
      break;
    }
    default: {
      ic::Result<ic::JpegHeader> header = ic::read_jpeg_header(image);
      if (header.ok() && (header->height <= 0 || header->width <= 0)) {
        ic::fuzz::check_failed("JPEG header: accepted a size that is not positive");
      }
      break;
    }
  }
  return 0;
}
