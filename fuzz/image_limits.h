// The pixel limit the image harnesses give the decoders. A decode allocates 3 bytes per pixel
// the header claims, whatever the file's size, so every decoder refuses an image over its
// limit from the header, before allocating; fuzz_image checks that it does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "data/image_codec.h"

namespace ic::fuzz {

constexpr int64_t kMaxImagePixels = int64_t{1} << 22;

// The pixel count the header claims, or 0 when it cannot be told (the decoder then fails).
inline int64_t claimed_pixels(std::string_view image) {
  switch (sniff_image_format(image)) {
    case ImageFormat::jpeg: {
      Result<JpegHeader> header = read_jpeg_header(image);
      return header.ok() ? int64_t{header->height} * header->width : 0;
    }
    case ImageFormat::png: {
      // IHDR is the first chunk: width and height, big-endian, at bytes 16-23.
      if (image.size() < 24) return 0;
      auto u32 = [&](size_t at) {
        uint64_t v = 0;
        for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(image[at + i]);
        return v;
      };
      return static_cast<int64_t>(std::min<uint64_t>(u32(16) * u32(20), INT64_MAX));
    }
    case ImageFormat::unknown: return 0;
  }
  return 0;
}

}  // namespace ic::fuzz
