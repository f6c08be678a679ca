// Hostile images against the decoders themselves: a header that claims a huge size is refused
// by every decoder before it allocates the pixels, whatever path calls it, and a JPEG whose
// data is truncated or damaged is an error instead of an image filled with grey.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "data/image_codec.h"
#include "data/preprocessing.h"

namespace ic {
namespace {

// A noisy image, so that its scan data is long enough to cut in the middle.
RgbImage noise_image(int height, int width) {
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  uint32_t state = 12345;
  for (uint8_t& v : image.pixels) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(state >> 24);
  }
  return image;
}

std::string noise_jpeg(int height = 64, int width = 48) {
  return *encode_jpeg(noise_image(height, width), 90);
}

// A JPEG whose frame header (SOF0) claims height x width; the scan data stays the small one's
// and ends at its EOI marker.
std::string noise_jpeg_claiming(int height, int width) {
  std::string bytes = noise_jpeg();
  const size_t sof = bytes.find("\xFF\xC0");
  EXPECT_NE(sof, std::string::npos);
  bytes[sof + 5] = static_cast<char>(height >> 8);
  bytes[sof + 6] = static_cast<char>(height & 0xff);
  bytes[sof + 7] = static_cast<char>(width >> 8);
  bytes[sof + 8] = static_cast<char>(width & 0xff);
  return bytes;
}

// PNG's chunk CRC (ISO 3309, the one zlib's crc32 computes), bit by bit.
uint32_t png_crc(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) {
    crc ^= static_cast<uint8_t>(c);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? 0xEDB88320u : 0u);
  }
  return crc ^ 0xFFFFFFFFu;
}

// A valid PNG whose IHDR claims height x width, with its CRC fixed as a real bomb has it; the
// image data stays the 4x4 one's.
std::string noise_png_claiming(uint32_t height, uint32_t width) {
  std::string bytes = *encode_png(noise_image(4, 4));
  auto put_be32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>(v >> (24 - 8 * i));
  };
  put_be32(16, width);
  put_be32(20, height);
  put_be32(29, png_crc(std::string_view(bytes).substr(12, 17)));  // "IHDR" + 13 data bytes
  return bytes;
}

void expect_refused_for_size(const Status& status, const std::string& what) {
  ASSERT_FALSE(status.ok()) << what;
  EXPECT_EQ(status.code(), StatusCode::resource_exhausted) << what << ": " << status.message();
  EXPECT_NE(status.message().find("60000x60000"), std::string::npos) << status.message();
}

TEST(DecompressionBombs, EveryDecoderRefusesThemBeforeAllocatingPixels) {
  for (const std::string& bomb :
       {noise_jpeg_claiming(60000, 60000), noise_png_claiming(60000, 60000)}) {
    for (const int denom : {1, 8}) {
      RgbImage full;
      expect_refused_for_size(decode_image_into(bomb, denom, &full), "full decode");
      EXPECT_EQ(full.pixels.capacity(), 0u) << "pixels were allocated for a refused image";

      RgbImage region;
      CropWindow decoded;
      expect_refused_for_size(
          decode_image_region_into(bomb, denom, CropWindow{0, 0, 8, 8}, &region, &decoded),
          "region decode");
      EXPECT_EQ(region.pixels.capacity(), 0u) << "pixels were allocated for a refused image";
    }
    // The limit holds by default: a caller that passes none gets --max_image_pixels' default.
    expect_refused_for_size(decode_image(bomb).status(), "decode_image");
  }
}

TEST(DecompressionBombs, TheLimitIsTheCallersAndZeroTurnsItOff) {
  const std::string jpeg = noise_jpeg(64, 48);
  RgbImage image;
  EXPECT_EQ(decode_image_into(jpeg, 1, &image, 64 * 48 - 1).code(), StatusCode::resource_exhausted);
  EXPECT_TRUE(decode_image_into(jpeg, 1, &image, 64 * 48).ok());
  EXPECT_TRUE(decode_image_into(jpeg, 1, &image, 0).ok());
  CropWindow decoded;
  EXPECT_EQ(decode_image_region_into(jpeg, 1, CropWindow{0, 0, 4, 4}, &image, &decoded, 100).code(),
            StatusCode::resource_exhausted);
  EXPECT_TRUE(decode_image_region_into(jpeg, 1, CropWindow{0, 0, 4, 4}, &image, &decoded, 0).ok());
  const std::string png = *encode_png(noise_image(10, 10));
  EXPECT_EQ(decode_image_into(png, 1, &image, 99).code(), StatusCode::resource_exhausted);
  EXPECT_TRUE(decode_image_into(png, 1, &image, 100).ok());
}

TEST(DecompressionBombs, PreprocessingPassesItsLimitToTheDecoder) {
  PreprocessOptions options;
  options.height = options.width = 16;
  options.max_pixels = 64 * 48 - 1;
  Rng rng(3);
  PreprocessScratch scratch;
  std::vector<float> out(16 * 16 * 3);
  EXPECT_EQ(preprocess_image(noise_jpeg(), {}, options, rng, &scratch, out.data()).code(),
            StatusCode::resource_exhausted);
  options.max_pixels = 64 * 48;
  EXPECT_TRUE(preprocess_image(noise_jpeg(), {}, options, rng, &scratch, out.data()).ok());
}

void expect_damaged(const Status& status, const std::string& what) {
  ASSERT_FALSE(status.ok()) << what << " decoded a damaged JPEG";
  const std::string& message = status.message();
  EXPECT_TRUE(message.find("Premature end") != std::string::npos ||
              message.find("Corrupt JPEG data") != std::string::npos)
      << what << ": " << message;
}

// With the pixel limit off, a small scan behind a 2000x2000 header used to decode "ok": libjpeg
// warns that the data segment ended early and fills the rest with grey.
TEST(DamagedJpegs, AScanShorterThanItsHeaderClaimsIsRefusedByBothDecoders) {
  const std::string short_scan = noise_jpeg_claiming(2000, 2000);
  RgbImage image;
  expect_damaged(decode_image_into(short_scan, 1, &image, 0), "full decode");
  expect_damaged(decode_image_into(short_scan, 8, &image, 0), "full decode at 1/8");
  CropWindow decoded;
  // A region below the real scan data, and one inside it (the rest is read to find the damage
  // only when the file does not end with EOI, as here it does: the region's rows themselves run
  // out of data).
  expect_damaged(
      decode_image_region_into(short_scan, 1, CropWindow{1500, 1500, 16, 16}, &image, &decoded, 0),
      "region decode");
}

TEST(DamagedJpegs, ATruncatedFileIsRefusedByBothDecoders) {
  const std::string jpeg = noise_jpeg(256, 256);
  for (const double keep : {0.3, 0.6, 0.95}) {
    const std::string cut = jpeg.substr(0, static_cast<size_t>(jpeg.size() * keep));
    RgbImage image;
    expect_damaged(decode_image_into(cut, 1, &image), "full decode");
    CropWindow decoded;
    expect_damaged(decode_image_region_into(cut, 1, CropWindow{0, 0, 16, 16}, &image, &decoded),
                   "region decode above the cut");
    expect_damaged(decode_image_region_into(cut, 2, CropWindow{120, 40, 8, 8}, &image, &decoded),
                   "region decode");
  }
}

// Extraneous bytes between the scan and EOI make libjpeg warn too ("Corrupt JPEG data: 2
// extraneous bytes before marker 0xd9"), but every pixel is there: accepted, as TensorFlow does.
TEST(DamagedJpegs, ExtraneousBytesBeforeAMarkerAreAccepted) {
  const std::string jpeg = noise_jpeg(64, 48);
  ASSERT_EQ(jpeg.substr(jpeg.size() - 2), "\xFF\xD9");
  const std::string padded =
      jpeg.substr(0, jpeg.size() - 2) + std::string("\x12\x34", 2) + "\xFF\xD9";
  Result<RgbImage> expected = decode_image(jpeg);
  Result<RgbImage> got = decode_image(padded);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->pixels, expected->pixels);
  RgbImage region;
  CropWindow decoded;
  EXPECT_TRUE(
      decode_image_region_into(padded, 1, CropWindow{0, 0, 64, 48}, &region, &decoded).ok());
}

TEST(DamagedJpegs, IntactJpegsOfEveryKindStillDecode) {
  for (const auto& [height, width] : {std::pair{1, 1}, {17, 33}, {64, 48}, {300, 200}}) {
    const std::string jpeg = noise_jpeg(height, width);
    for (const int denom : {1, 2, 4, 8}) {
      Result<RgbImage> full = decode_image(jpeg, denom);
      ASSERT_TRUE(full.ok()) << full.status().message();
      RgbImage region;
      CropWindow decoded;
      EXPECT_TRUE(
          decode_image_region_into(jpeg, denom, CropWindow{0, 0, 1, 1}, &region, &decoded).ok());
    }
  }
}

}  // namespace
}  // namespace ic
