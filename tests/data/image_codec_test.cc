#include "data/image_codec.h"

#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace ic {
namespace {

// A smooth colour gradient: JPEG keeps it to within a few levels.
RgbImage gradient_image(int height, int width) {
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &image.pixels[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(40 + 160 * x / width);
      p[1] = static_cast<uint8_t>(40 + 160 * y / height);
      p[2] = static_cast<uint8_t>(120);
    }
  }
  return image;
}

double mean_abs_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(int(a[i]) - int(b[i]));
  return sum / static_cast<double>(a.size());
}

TEST(ImageCodec, SniffsFormatsByMagicBytes) {
  RgbImage image = gradient_image(8, 8);
  EXPECT_EQ(sniff_image_format(*encode_jpeg(image, 90)), ImageFormat::jpeg);
  EXPECT_EQ(sniff_image_format(*encode_png(image)), ImageFormat::png);
  EXPECT_EQ(sniff_image_format("GIF89a..."), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format(""), ImageFormat::unknown);
}

TEST(ImageCodec, JpegRoundTripKeepsSizeAndContent) {
  const RgbImage image = gradient_image(75, 100);
  Result<std::string> jpeg = encode_jpeg(image, 95);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().message();
  Result<JpegHeader> header = read_jpeg_header(*jpeg);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->height, 75);
  EXPECT_EQ(header->width, 100);
  EXPECT_EQ(header->components, 3);
  EXPECT_FALSE(header->is_cmyk);
  Result<RgbImage> decoded = decode_image(*jpeg);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->height, 75);
  ASSERT_EQ(decoded->width, 100);
  EXPECT_LT(mean_abs_difference(decoded->pixels, image.pixels), 2.0);
}

TEST(ImageCodec, DctScalingDecodesCeilOfSizeOverDenominator) {
  const RgbImage image = gradient_image(75, 101);
  const std::string jpeg = *encode_jpeg(image, 90);
  for (int denom : {2, 4, 8}) {
    Result<RgbImage> decoded = decode_image(jpeg, denom);
    ASSERT_TRUE(decoded.ok()) << decoded.status().message();
    EXPECT_EQ(decoded->height, (75 + denom - 1) / denom);
    EXPECT_EQ(decoded->width, (101 + denom - 1) / denom);
    // The scaled image is the downsampled gradient: check one interior pixel's red channel.
    const int y = decoded->height / 2, x = decoded->width / 2;
    const int red = decoded->pixels[(static_cast<size_t>(y) * decoded->width + x) * 3];
    EXPECT_NEAR(red, 40 + 160.0 * (x + 0.5) * denom / 101, 6.0) << "denom " << denom;
  }
  EXPECT_FALSE(decode_image(jpeg, 3).ok());
}

TEST(ImageCodec, GrayscaleJpegBecomesRgb) {
  std::vector<uint8_t> gray(16 * 16);
  for (size_t i = 0; i < gray.size(); ++i)
    gray[i] = static_cast<uint8_t>(60 + 4 * (i % 16) + 4 * (i / 16));
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(
      tjCompress2(handle, gray.data(), 16, 0, 16, TJPF_GRAY, &buffer, &size, TJSAMP_GRAY, 100, 0),
      0);
  const std::string jpeg(reinterpret_cast<char*>(buffer), size);
  tjFree(buffer);
  tjDestroy(handle);
  EXPECT_EQ(read_jpeg_header(jpeg)->components, 1);
  Result<RgbImage> decoded = decode_image(jpeg);
  ASSERT_TRUE(decoded.ok());
  for (size_t i = 0; i < gray.size(); ++i) {
    EXPECT_EQ(decoded->pixels[3 * i], decoded->pixels[3 * i + 1]);
    EXPECT_EQ(decoded->pixels[3 * i], decoded->pixels[3 * i + 2]);
    EXPECT_NEAR(decoded->pixels[3 * i], gray[i], 3);
  }
}

// TurboJPEG writes CMYK as an Adobe YCCK JPEG (APP14 "Adobe" marker, inverted storage), so
// decoding must give TensorFlow's R = C*K/255 on the values we stored.
TEST(ImageCodec, AdobeCmykJpegConvertsLikeTensorFlow) {
  const int c = 200, m = 100, y = 50, k = 230;
  std::vector<uint8_t> cmyk(16 * 16 * 4);
  for (size_t i = 0; i < 16 * 16; ++i) {
    cmyk[4 * i] = c, cmyk[4 * i + 1] = m, cmyk[4 * i + 2] = y, cmyk[4 * i + 3] = k;
  }
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(
      tjCompress2(handle, cmyk.data(), 16, 0, 16, TJPF_CMYK, &buffer, &size, TJSAMP_444, 100, 0),
      0);
  const std::string jpeg(reinterpret_cast<char*>(buffer), size);
  tjFree(buffer);
  tjDestroy(handle);
  ASSERT_NE(jpeg.find("Adobe"), std::string::npos);
  Result<JpegHeader> header = read_jpeg_header(jpeg);
  ASSERT_TRUE(header.ok());
  EXPECT_TRUE(header->is_cmyk);
  EXPECT_EQ(header->components, 4);
  Result<RgbImage> decoded = decode_image(jpeg);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->pixels.size(), 16u * 16 * 3);
  EXPECT_NEAR(decoded->pixels[0], c * k / 255, 3);
  EXPECT_NEAR(decoded->pixels[1], m * k / 255, 3);
  EXPECT_NEAR(decoded->pixels[2], y * k / 255, 3);
}

TEST(ImageCodec, PngRoundTripIsExact) {
  const RgbImage image = gradient_image(13, 17);
  Result<std::string> png = encode_png(image);
  ASSERT_TRUE(png.ok()) << png.status().message();
  Result<RgbImage> decoded = decode_image(*png, 4);  // scale is ignored for PNG
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->height, 13);
  EXPECT_EQ(decoded->width, 17);
  EXPECT_EQ(decoded->pixels, image.pixels);
}

TEST(ImageCodec, GrayAlphaPngDropsAlpha) {
  // Gray 100 with alpha 0: TensorFlow strips alpha, so the pixel is (100, 100, 100), not black.
  std::vector<uint8_t> gray_alpha = {100, 0, 200, 255};
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = 2;
  png.height = 1;
  png.format = PNG_FORMAT_GA;
  png_alloc_size_t size = 0;
  ASSERT_TRUE(png_image_write_to_memory(&png, nullptr, &size, 0, gray_alpha.data(), 0, nullptr));
  std::string bytes(size, '\0');
  ASSERT_TRUE(
      png_image_write_to_memory(&png, bytes.data(), &size, 0, gray_alpha.data(), 0, nullptr));
  bytes.resize(size);
  Result<RgbImage> decoded = decode_image(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->pixels, (std::vector<uint8_t>{100, 100, 100, 200, 200, 200}));
}

TEST(ImageCodec, CorruptDataIsAnError) {
  const std::string jpeg = *encode_jpeg(gradient_image(64, 64), 90);
  EXPECT_FALSE(decode_image(jpeg.substr(0, jpeg.size() / 2)).ok());  // truncated
  EXPECT_FALSE(decode_image("not an image").ok());
  EXPECT_FALSE(decode_image(std::string("\xFF\xD8\xFF\x00garbage", 11)).ok());
  const std::string png = *encode_png(gradient_image(8, 8));
  EXPECT_FALSE(decode_image(png.substr(0, png.size() - 20)).ok());
  EXPECT_FALSE(read_jpeg_header("nope").ok());
  EXPECT_FALSE(encode_jpeg(RgbImage{}, 90).ok());
  EXPECT_FALSE(encode_jpeg(gradient_image(4, 4), 0).ok());
}

// A failed header read must not spoil the thread's decoder for the next image.
TEST(ImageCodec, DecoderRecoversAfterBadHeaders) {
  const std::string jpeg = *encode_jpeg(gradient_image(16, 16), 90);
  for (const std::string& bad : {std::string("\xFF\xD8\xFF\xE0\x00\x10JFIF", 10),
                                 jpeg.substr(0, 30), std::string("\xFF\xD8\xFF", 3)}) {
    EXPECT_FALSE(read_jpeg_header(bad).ok());
    EXPECT_FALSE(decode_image(bad).ok());
    Result<JpegHeader> header = read_jpeg_header(jpeg);
    ASSERT_TRUE(header.ok()) << header.status().message();
    EXPECT_EQ(header->width, 16);
    ASSERT_TRUE(decode_image(jpeg).ok());
  }
}

// JPEG marker segments after SOI, up to and including SOS (the entropy-coded data follows).
std::vector<std::string> header_segments(const std::string& jpeg, size_t* scan_start) {
  std::vector<std::string> segments;
  size_t pos = 2;
  while (pos + 4 <= jpeg.size()) {
    const size_t length =
        (static_cast<uint8_t>(jpeg[pos + 2]) << 8) | static_cast<uint8_t>(jpeg[pos + 3]);
    segments.push_back(jpeg.substr(pos, 2 + length));
    const bool sos = static_cast<uint8_t>(jpeg[pos + 1]) == 0xDA;
    pos += 2 + length;
    if (sos) break;
  }
  *scan_start = pos;
  return segments;
}

// Found by fuzz/fuzz_image: a JPEG that leaves its chroma Huffman tables undefined decodes with
// libjpeg's standard tables, but a decoder reused from an earlier image kept that image's tables
// and gave other pixels. Every decode must depend on its own bytes only.
TEST(ImageCodec, DecodeDoesNotReuseAnEarlierImagesTables) {
  const std::string jpeg = *encode_jpeg(gradient_image(16, 24), 90);  // standard tables
  size_t scan_start = 0;
  const std::vector<std::string> segments = header_segments(jpeg, &scan_start);
  auto is_dht = [](const std::string& s) { return static_cast<uint8_t>(s[1]) == 0xC4; };
  // Without the chroma tables (id 1): decodes with the standard ones, i.e. as `jpeg` does.
  std::string without_chroma_tables = jpeg.substr(0, 2);
  // The luma tables relabelled as chroma ones, then the same image: other chroma pixels.
  std::string other_tables = jpeg.substr(0, 2);
  for (const std::string& segment : segments) {
    if (is_dht(segment) && (segment[4] & 0x0f) == 0) {
      std::string relabelled = segment;
      relabelled[4] = static_cast<char>(segment[4] | 1);
      other_tables += relabelled;
    }
  }
  for (const std::string& segment : segments) {
    if (!is_dht(segment) || (segment[4] & 0x0f) == 0) without_chroma_tables += segment;
  }
  without_chroma_tables += jpeg.substr(scan_start);
  other_tables += without_chroma_tables.substr(2);

  const RgbImage expected = *decode_image(jpeg);
  const CropWindow whole{0, 0, 16, 24};
  for (int round = 0; round < 2; ++round) {
    (void)decode_image(other_tables);  // loads other tables into a reused decoder
    Result<RgbImage> full = decode_image(without_chroma_tables);
    ASSERT_TRUE(full.ok()) << full.status().message();
    EXPECT_EQ(full->pixels, expected.pixels) << "round " << round;
    RgbImage region;
    CropWindow decoded;
    (void)decode_image_region_into(other_tables, 1, whole, &region, &decoded);
    ASSERT_TRUE(decode_image_region_into(without_chroma_tables, 1, whole, &region, &decoded).ok());
    EXPECT_EQ(region.pixels, expected.pixels) << "round " << round;
  }
}

}  // namespace
}  // namespace ic
