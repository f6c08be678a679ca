// decode_image_region_into against the full decode: the wanted pixels must be identical.
#include <gtest/gtest.h>
#include <turbojpeg.h>

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/image_codec.h"
#include "data/random.h"

namespace ic {
namespace {

// Texture plus colour waves: chroma changes from pixel to pixel, so an upsampling difference at
// a region edge would show.
RgbImage textured_image(int height, int width, uint64_t seed) {
  Rng rng(seed);
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const double wave = 90 * std::sin(0.05 * (c + 1) * x + 0.03 * y * (3 - c));
        const double v = 128 + wave + rng.uniform(-30.0f, 30.0f);
        image.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::fmin(255, std::fmax(0, v)));
      }
    }
  }
  return image;
}

std::string compress(const RgbImage& image, int subsampling, int flags) {
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool gray = subsampling == TJSAMP_GRAY;
  std::vector<uint8_t> luma;
  if (gray) {
    for (size_t i = 0; i < image.pixels.size(); i += 3) luma.push_back(image.pixels[i]);
  }
  const int rc =
      tjCompress2(handle, gray ? luma.data() : image.pixels.data(), image.width, 0, image.height,
                  gray ? TJPF_GRAY : TJPF_RGB, &buffer, &size, subsampling, 90, flags);
  std::string jpeg = rc == 0 ? std::string(reinterpret_cast<char*>(buffer), size) : "";
  tjFree(buffer);
  tjDestroy(handle);
  return jpeg;
}

// Checks every pixel of `wanted` (clamped to the scaled image) against the full decode.
void expect_region_matches_full(const std::string& jpeg, int denom, CropWindow wanted,
                                const std::string& what) {
  SCOPED_TRACE(what + " denom " + std::to_string(denom) + " wanted y" + std::to_string(wanted.y) +
               " x" + std::to_string(wanted.x) + " " + std::to_string(wanted.height) + "x" +
               std::to_string(wanted.width));
  Result<RgbImage> full = decode_image(jpeg, denom);
  ASSERT_TRUE(full.ok()) << full.status().message();
  RgbImage region;
  CropWindow decoded;
  ASSERT_TRUE(decode_image_region_into(jpeg, denom, wanted, &region, &decoded).ok());
  ASSERT_EQ(region.height, decoded.height);
  ASSERT_EQ(region.width, decoded.width);
  ASSERT_EQ(region.pixels.size(), static_cast<size_t>(region.height) * region.width * 3);
  const int y0 = std::max(wanted.y, 0), x0 = std::max(wanted.x, 0);
  const int y1 = std::min(wanted.y + wanted.height, full->height);
  const int x1 = std::min(wanted.x + wanted.width, full->width);
  ASSERT_LE(decoded.y, y0);
  ASSERT_LE(decoded.x, x0);
  ASSERT_GE(decoded.y + decoded.height, y1);
  ASSERT_GE(decoded.x + decoded.width, x1);
  ASSERT_LE(decoded.y + decoded.height, full->height);
  ASSERT_LE(decoded.x + decoded.width, full->width);
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int expected = full->pixels[(static_cast<size_t>(y) * full->width + x) * 3 + c];
        const int got =
            region.pixels[(static_cast<size_t>(y - decoded.y) * region.width + x - decoded.x) * 3 +
                          c];
        ASSERT_EQ(got, expected) << "at " << y << "," << x << "," << c;
      }
    }
  }
}

const CropWindow kCrops[] = {
    {0, 0, 1000, 1000},  // everything (clamped)
    {0, 0, 7, 9},        // top-left corner
    {13, 21, 40, 37},    // interior, off the block grid
    {16, 32, 32, 48},    // interior, on the block grid
    {31, 17, 200, 11},   // to the bottom edge
    {5, 50, 17, 1000},   // to the right edge
    {57, 69, 1, 1},      // one pixel
};

TEST(JpegRegion, EqualsFullDecodeForEverySubsamplingScaleAndCrop) {
  const RgbImage image = textured_image(123, 157, 3);
  const std::pair<int, const char*> kinds[] = {{TJSAMP_420, "4:2:0"},
                                               {TJSAMP_422, "4:2:2"},
                                               {TJSAMP_444, "4:4:4"},
                                               {TJSAMP_440, "4:4:0"},
                                               {TJSAMP_GRAY, "gray"}};
  for (const auto& [subsampling, name] : kinds) {
    const std::string jpeg = compress(image, subsampling, 0);
    ASSERT_FALSE(jpeg.empty());
    for (int denom : {1, 2, 4, 8}) {
      for (const CropWindow& crop : kCrops) {
        CropWindow scaled = crop;
        if (denom > 1) scaled = CropWindow{crop.y / denom, crop.x / denom, crop.height, crop.width};
        expect_region_matches_full(jpeg, denom, scaled, name);
      }
    }
  }
}

TEST(JpegRegion, ProgressiveJpegToo) {
  const std::string jpeg = compress(textured_image(90, 130, 5), TJSAMP_420, TJFLAG_PROGRESSIVE);
  ASSERT_FALSE(jpeg.empty());
  for (int denom : {1, 2}) {
    for (const CropWindow& crop : kCrops) expect_region_matches_full(jpeg, denom, crop, "prog");
  }
}

// Under about 16 pixels a side, TurboJPEG's full decode (which picks its scaling factor from the
// output size) would take a larger factor with the same output size, e.g. 3/8 for a 5x5 image
// asked at 1/4; the full decode must still be at exactly 1/denom, as the region decode is.
TEST(JpegRegion, TinyImagesAtEveryScaleToo) {
  const int kSides[] = {1, 2, 3, 5, 7, 9, 12, 17};
  for (int height : kSides) {
    for (int width : kSides) {
      const RgbImage image = textured_image(height, width, 11);
      for (int flags : {0, TJFLAG_PROGRESSIVE}) {
        for (int subsampling : {TJSAMP_420, TJSAMP_422, TJSAMP_444}) {
          const std::string jpeg = compress(image, subsampling, flags);
          ASSERT_FALSE(jpeg.empty());
          const std::string what = std::to_string(height) + "x" + std::to_string(width) +
                                   " subsampling " + std::to_string(subsampling) + " flags " +
                                   std::to_string(flags);
          for (int denom : {2, 4, 8}) {
            for (int y = 0; y < jpeg_scaled_size(height, denom); ++y) {
              expect_region_matches_full(jpeg, denom, CropWindow{y, 0, 1, 1000}, what);
            }
          }
        }
      }
    }
  }
}

// A one-pixel window near the right edge of an image one or two pixels wider than a multiple of
// the iMCU: the crop, aligned left to the iMCU, leaves chroma 1 sample wide, where libjpeg
// would box-upsample instead of its fancy upsampling unless the crop is widened.
TEST(JpegRegion, NarrowWindowsAtTheRightEdgeToo) {
  for (int width : {17, 18, 19, 33, 34}) {
    const RgbImage image = textured_image(11, width, 13);
    for (int subsampling : {TJSAMP_420, TJSAMP_422}) {
      const std::string jpeg = compress(image, subsampling, 0);
      ASSERT_FALSE(jpeg.empty());
      const std::string what = "width " + std::to_string(width);
      for (int denom : {1, 2}) {
        for (int x = 0; x < jpeg_scaled_size(width, denom); ++x) {
          expect_region_matches_full(jpeg, denom, CropWindow{3, x, 1, 1}, what);
        }
      }
    }
  }
}

// Sampling factors TurboJPEG's compressor cannot write (luma 1x4, chroma 1x2 and 1x1), through
// libjpeg's own compressor.
std::string compress_progressive_1x4(const RgbImage& image) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr errors;
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  const int sampling[3][2] = {{1, 4}, {1, 2}, {1, 1}};
  for (int c = 0; c < 3; ++c) {
    cinfo.comp_info[c].h_samp_factor = sampling[c][0];
    cinfo.comp_info[c].v_samp_factor = sampling[c][1];
  }
  jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> row;
  while (cinfo.next_scanline < cinfo.image_height) {
    const uint8_t* first =
        image.pixels.data() + static_cast<size_t>(cinfo.next_scanline) * image.width * 3;
    row.assign(first, first + static_cast<size_t>(image.width) * 3);
    JSAMPROW pointer = row.data();
    jpeg_write_scanlines(&cinfo, &pointer, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string jpeg(reinterpret_cast<char*>(buffer), size);
  std::free(buffer);
  return jpeg;
}

// Bytes after the end marker make the region decode read the stream to its end. In a
// progressive JPEG with luma sampled 1x4, libjpeg-turbo 2.1's row skip after a read never
// returns, so the rows below the region must not be skipped (every scan is read already).
TEST(JpegRegion, ProgressiveTallSamplingWithTrailingBytesReturns) {
  const RgbImage image = textured_image(52, 6, 17);
  const std::string jpeg = compress_progressive_1x4(image) + "trailer";
  RgbImage region;
  CropWindow decoded;
  ASSERT_TRUE(decode_image_region_into(jpeg, 1, CropWindow{19, 0, 11, 6}, &region, &decoded).ok());
  EXPECT_EQ(decoded, (CropWindow{19, 0, 11, 6}));
  // The region's rows are those of the whole image decoded by the same decoder.
  RgbImage whole;
  ASSERT_TRUE(decode_image_region_into(jpeg, 1, CropWindow{0, 0, 52, 6}, &whole, &decoded).ok());
  const size_t stride = static_cast<size_t>(6) * 3;
  EXPECT_TRUE(std::equal(region.pixels.begin(), region.pixels.end(),
                         whole.pixels.begin() + static_cast<std::ptrdiff_t>(19 * stride)));
}

// A progressive JPEG cut short is refused too: its damage shows while its scans are read.
TEST(JpegRegion, TruncatedProgressiveStreamIsAnError) {
  const std::string jpeg = compress(textured_image(90, 130, 5), TJSAMP_420, TJFLAG_PROGRESSIVE);
  const std::string cut = jpeg.substr(0, jpeg.size() * 2 / 3);
  RgbImage region;
  CropWindow decoded;
  EXPECT_FALSE(decode_image(cut).ok());
  EXPECT_FALSE(decode_image_region_into(cut, 1, CropWindow{0, 0, 8, 8}, &region, &decoded).ok());
}

// The stream is cut inside its scan: decoding a region above the cut is still an error, as the
// full decode is (TensorFlow's decode_jpeg fails on it).
TEST(JpegRegion, TruncatedStreamIsAnErrorEvenAboveTheCut) {
  const std::string jpeg = compress(textured_image(160, 160, 7), TJSAMP_420, 0);
  const std::string cut = jpeg.substr(0, jpeg.size() * 3 / 4);
  RgbImage region;
  CropWindow decoded;
  EXPECT_FALSE(decode_image(cut).ok());
  EXPECT_FALSE(decode_image_region_into(cut, 1, CropWindow{0, 0, 16, 16}, &region, &decoded).ok());
  EXPECT_FALSE(
      decode_image_region_into(cut, 1, CropWindow{100, 8, 60, 40}, &region, &decoded).ok());
  EXPECT_FALSE(
      decode_image_region_into("\xFF\xD8\xFF garbage", 1, CropWindow{0, 0, 4, 4}, &region, &decoded)
          .ok());
  EXPECT_FALSE(decode_image_region_into(jpeg, 3, CropWindow{0, 0, 4, 4}, &region, &decoded).ok());
  // The per-thread decompressor recovers from the failures.
  expect_region_matches_full(jpeg, 1, CropWindow{20, 30, 50, 60}, "after errors");
}

// Bytes after EOI are accepted (with a warning) by the full decode, and so by the region decode.
TEST(JpegRegion, TrailingBytesAfterEndOfImageAreAccepted) {
  const std::string jpeg = compress(textured_image(64, 80, 9), TJSAMP_420, 0) + "trailer";
  ASSERT_TRUE(decode_image(jpeg).ok());
  expect_region_matches_full(jpeg, 1, CropWindow{10, 20, 20, 20}, "trailing bytes");
}

TEST(JpegRegion, CmykAndPngAreDecodedWhole) {
  std::vector<uint8_t> cmyk(24 * 40 * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<uint8_t>(i * 7);
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(
      tjCompress2(handle, cmyk.data(), 40, 0, 24, TJPF_CMYK, &buffer, &size, TJSAMP_444, 95, 0), 0);
  const std::string jpeg(reinterpret_cast<char*>(buffer), size);
  tjFree(buffer);
  tjDestroy(handle);
  RgbImage region;
  CropWindow decoded;
  ASSERT_TRUE(decode_image_region_into(jpeg, 1, CropWindow{4, 8, 5, 5}, &region, &decoded).ok());
  EXPECT_EQ(decoded, (CropWindow{0, 0, 24, 40}));
  EXPECT_EQ(region.pixels, decode_image(jpeg)->pixels);

  const RgbImage image = textured_image(20, 30, 1);
  ASSERT_TRUE(
      decode_image_region_into(*encode_png(image), 2, CropWindow{1, 1, 3, 3}, &region, &decoded)
          .ok());
  EXPECT_EQ(decoded, (CropWindow{0, 0, 20, 30}));
  EXPECT_EQ(region.pixels, image.pixels);
}

}  // namespace
}  // namespace ic
