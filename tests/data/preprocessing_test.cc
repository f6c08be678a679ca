#include "data/preprocessing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ic {
namespace {

RgbImage random_image(int height, int width, uint64_t seed) {
  Rng rng(seed);
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  for (uint8_t& p : image.pixels) p = static_cast<uint8_t>(rng.uniform_int(256));
  return image;
}

// Smooth content so that JPEG and DCT scaling change it little.
RgbImage smooth_image(int height, int width) {
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &image.pixels[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(128 + 100 * std::sin(x * 0.02));
      p[1] = static_cast<uint8_t>(128 + 100 * std::cos(y * 0.015));
      p[2] = static_cast<uint8_t>(60 + 120.0 * (x + y) / (width + height));
    }
  }
  return image;
}

// TF1 resize_bilinear (align_corners=False, half_pixel_centers=False) of a crop, written
// directly from the definition in double precision.
std::vector<double> reference_resize(const RgbImage& image, CropWindow crop, int out_h, int out_w) {
  std::vector<double> out(static_cast<size_t>(out_h) * out_w * 3);
  const double sy = static_cast<double>(crop.height) / out_h;
  const double sx = static_cast<double>(crop.width) / out_w;
  auto pixel = [&](int y, int x, int c) {
    return static_cast<double>(
        image.pixels[(static_cast<size_t>(crop.y + y) * image.width + crop.x + x) * 3 + c]);
  };
  for (int y = 0; y < out_h; ++y) {
    const double in_y = y * sy;
    const int y0 = static_cast<int>(std::floor(in_y));
    const int y1 = std::min(y0 + 1, crop.height - 1);
    const double dy = in_y - y0;
    for (int x = 0; x < out_w; ++x) {
      const double in_x = x * sx;
      const int x0 = static_cast<int>(std::floor(in_x));
      const int x1 = std::min(x0 + 1, crop.width - 1);
      const double dx = in_x - x0;
      for (int c = 0; c < 3; ++c) {
        const double top = pixel(y0, x0, c) * (1 - dx) + pixel(y0, x1, c) * dx;
        const double bottom = pixel(y1, x0, c) * (1 - dx) + pixel(y1, x1, c) * dx;
        out[(static_cast<size_t>(y) * out_w + x) * 3 + c] = top * (1 - dy) + bottom * dy;
      }
    }
  }
  return out;
}

TEST(DistortedBoundingBox, CropsStayWithinAspectAndAreaRanges) {
  const int height = 375, width = 500;
  DistortedBoxOptions options;  // the reference's: covered 0.1, aspect [3/4, 4/3], area [0.05, 1]
  Rng rng(7);
  int whole_image = 0;
  double min_area = 1, max_area = 0, min_aspect = 10, max_aspect = 0;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    Result<CropWindow> crop = sample_distorted_bounding_box(height, width, {}, options, rng);
    ASSERT_TRUE(crop.ok());
    ASSERT_GE(crop->y, 0);
    ASSERT_GE(crop->x, 0);
    ASSERT_LE(crop->y + crop->height, height);
    ASSERT_LE(crop->x + crop->width, width);
    if (*crop == CropWindow{0, 0, height, width}) {
      ++whole_image;
      continue;
    }
    const double area = static_cast<double>(crop->height) * crop->width / (height * width);
    const double aspect = static_cast<double>(crop->width) / crop->height;
    // The whole-image box must be covered by >= 10%, so the area is in [0.1, 1].
    EXPECT_GE(area, 0.1);
    EXPECT_LE(area, 1.0);
    // Width is round(height * aspect): allow half a pixel of rounding.
    EXPECT_GE(aspect, 0.75 - 0.5 / crop->height);
    EXPECT_LE(aspect, 4.0 / 3.0 + 0.5 / crop->height);
    min_area = std::min(min_area, area), max_area = std::max(max_area, area);
    min_aspect = std::min(min_aspect, aspect), max_aspect = std::max(max_aspect, aspect);
  }
  // The draws span the ranges, and 100 attempts almost never all fail on this image.
  EXPECT_LT(min_area, 0.12);
  EXPECT_GT(max_area, 0.95);
  EXPECT_LT(min_aspect, 0.77);
  EXPECT_GT(max_aspect, 1.30);
  EXPECT_LT(whole_image, draws / 100);
}

TEST(DistortedBoundingBox, AnnotatedBoxIsCoveredAndBadBoxesRejected) {
  const int height = 300, width = 400;
  const BoundingBox box{0.1f, 0.6f, 0.4f, 0.9f};  // ymin, xmin, ymax, xmax
  DistortedBoxOptions options;
  options.min_object_covered = 0.5f;
  Rng rng(3);
  const int bx0 = static_cast<int>(0.6f * width), bx1 = static_cast<int>(0.9f * width);
  const int by0 = static_cast<int>(0.1f * height), by1 = static_cast<int>(0.4f * height);
  for (int i = 0; i < 2000; ++i) {
    CropWindow crop = *sample_distorted_bounding_box(height, width, {&box, 1}, options, rng);
    if (crop == CropWindow{0, 0, height, width}) continue;
    const int ix = std::max(0, std::min(crop.x + crop.width, bx1) - std::max(crop.x, bx0));
    const int iy = std::max(0, std::min(crop.y + crop.height, by1) - std::max(crop.y, by0));
    EXPECT_GE(static_cast<double>(ix) * iy / ((bx1 - bx0) * (by1 - by0)), 0.5);
  }
  const BoundingBox bad{-0.1f, 0, 1, 1};
  EXPECT_FALSE(sample_distorted_bounding_box(height, width, {&bad, 1}, options, rng).ok());
}

TEST(DistortedBoundingBox, ImpossibleConstraintsFallBackToWholeImage) {
  DistortedBoxOptions options;
  options.min_object_covered = 1.5f;  // nothing can cover 150% of the image
  Rng rng(1);
  EXPECT_EQ(*sample_distorted_bounding_box(40, 60, {}, options, rng), (CropWindow{0, 0, 40, 60}));
}

TEST(CentralCrop, MatchesTensorFlowCoordinates) {
  // start = int((375 - 328.125) / 2) = 23, height = 375 - 46; int((500 - 437.5) / 2) = 31.
  EXPECT_EQ(central_crop_window(375, 500, 0.875), (CropWindow{23, 31, 329, 438}));
  EXPECT_EQ(central_crop_window(299, 299, 0.875), (CropWindow{18, 18, 263, 263}));
  EXPECT_EQ(central_crop_window(8, 8, 0.875), (CropWindow{0, 0, 8, 8}));
  EXPECT_EQ(central_crop_window(100, 10, 1.0), (CropWindow{0, 0, 100, 10}));
}

TEST(ResizeBilinear, MatchesReferenceForUpAndDownScaling) {
  const RgbImage image = random_image(37, 53, 11);
  for (const CropWindow crop : {CropWindow{0, 0, 37, 53}, CropWindow{5, 9, 20, 31}}) {
    for (const auto& [oh, ow] : {std::pair{13, 17}, std::pair{50, 64}, std::pair{20, 31}}) {
      std::vector<float> out(static_cast<size_t>(oh) * ow * 3);
      resize_bilinear(image, crop, oh, ow, out.data());
      const std::vector<double> expected = reference_resize(image, crop, oh, ow);
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_NEAR(out[i], expected[i], 1e-3)
            << "crop " << crop.y << "," << crop.x << " out " << oh << "x" << ow << " at " << i;
      }
    }
  }
}

TEST(Preprocess, InceptionEvalIsCentralCropResizeAndScale) {
  const RgbImage image = random_image(60, 80, 5);
  const std::string png = *encode_png(image);  // lossless, so the reference is exact
  PreprocessOptions options;
  options.training = false;
  options.height = 24;
  options.width = 32;
  PreprocessScratch scratch;
  Rng rng(0);
  std::vector<float> out(24 * 32 * 3);
  PreprocessTrace trace;
  ASSERT_TRUE(preprocess_image(png, {}, options, rng, &scratch, out.data(), &trace).ok());
  const CropWindow crop = central_crop_window(60, 80, 0.875);
  EXPECT_EQ(trace.crop, crop);
  EXPECT_FALSE(trace.flipped);
  const std::vector<double> expected = reference_resize(image, crop, 24, 32);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], (expected[i] / 255.0 - 0.5) * 2, 1e-4) << i;
  }
}

// The training output, rebuilt from the same random draws: crop, flip, colour, scale.
TEST(Preprocess, InceptionTrainIsCropResizeFlipColourScale) {
  const RgbImage image = random_image(50, 70, 9);
  const std::string png = *encode_png(image);
  PreprocessOptions options;
  options.height = 20;
  options.width = 30;
  PreprocessScratch scratch;
  int flips = 0;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    Rng rng(seed), replay(seed);
    std::vector<float> out(20 * 30 * 3);
    PreprocessTrace trace;
    ASSERT_TRUE(preprocess_image(png, {}, options, rng, &scratch, out.data(), &trace).ok());
    const CropWindow crop = *sample_distorted_bounding_box(50, 70, {}, options.box, replay);
    const bool flip = replay.coin();
    const float br = replay.uniform(-32.0f / 255, 32.0f / 255);
    const float cb = replay.uniform(-0.1f, 0.1f), cr = replay.uniform(-0.1f, 0.1f);
    const double offsets[3] = {1.402 * cr + br, -0.344136 * cb - 0.714136 * cr + br,
                               1.772 * cb + br};
    EXPECT_EQ(trace.crop, crop);
    EXPECT_EQ(trace.flipped, flip);
    flips += flip;
    const std::vector<double> resized = reference_resize(image, crop, 20, 30);
    for (int y = 0; y < 20; ++y) {
      for (int x = 0; x < 30; ++x) {
        const int sx = flip ? 29 - x : x;
        for (int c = 0; c < 3; ++c) {
          double v = resized[(static_cast<size_t>(y) * 30 + sx) * 3 + c] / 255.0 + offsets[c];
          v = std::clamp(v, 0.0, 1.0);
          ASSERT_NEAR(out[(static_cast<size_t>(y) * 30 + x) * 3 + c], (v - 0.5) * 2, 1e-4)
              << "seed " << seed << " at " << y << "," << x << "," << c;
        }
      }
    }
  }
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, 16);
}

// --use_fast_color_distort=false: the same crop and flip, then brightness, saturation (the
// kernel's HSV scaling in closed form, see color_ops_test.cc), clip to [0, 1], scale to [-1, 1].
TEST(Preprocess, InceptionTrainSlimColourIsBrightnessThenSaturation) {
  // Random pixels, with near-black rows at the bottom so that some pixels fall below 0 (a grey
  // at v <= 0 stays at v) and some near-white ones above 1.
  RgbImage image = random_image(50, 70, 21);
  for (size_t i = image.pixels.size() * 3 / 5; i < image.pixels.size(); ++i) image.pixels[i] %= 6;
  const std::string png = *encode_png(image);
  PreprocessOptions options;
  options.height = 20;
  options.width = 30;
  options.fast_color_distort = false;
  PreprocessScratch scratch;
  int clipped_low = 0, clipped_high = 0;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Rng rng(seed), replay(seed);
    std::vector<float> out(20 * 30 * 3);
    PreprocessTrace trace;
    ASSERT_TRUE(preprocess_image(png, {}, options, rng, &scratch, out.data(), &trace).ok());
    const CropWindow crop = *sample_distorted_bounding_box(50, 70, {}, options.box, replay);
    const bool flip = replay.coin();
    const double br = replay.uniform(-32.0f / 255, 32.0f / 255);
    const double factor = replay.uniform(0.5f, 1.5f);
    EXPECT_EQ(trace.crop, crop);
    EXPECT_EQ(trace.flipped, flip);
    const std::vector<double> resized = reference_resize(image, crop, 20, 30);
    for (int y = 0; y < 20; ++y) {
      for (int x = 0; x < 30; ++x) {
        const int sx = flip ? 29 - x : x;
        double p[3];
        for (int c = 0; c < 3; ++c) {
          p[c] = resized[(static_cast<size_t>(y) * 30 + sx) * 3 + c] / 255.0 + br;
        }
        const double v = std::max({p[0], p[1], p[2]});
        const double range = v - std::min({p[0], p[1], p[2]});
        const double f = v <= 0 ? 1.0 : range > 0 ? std::min(factor, v / range) : 0.0;
        for (int c = 0; c < 3; ++c) {
          const double saturated = v <= 0 ? v : v - f * (v - p[c]);
          const double clipped = std::clamp(saturated, 0.0, 1.0);
          clipped_low += saturated < -1e-9;
          clipped_high += saturated > 1 + 1e-9;
          ASSERT_NEAR(out[(static_cast<size_t>(y) * 30 + x) * 3 + c], (clipped - 0.5) * 2, 1e-4)
              << "seed " << seed << " at " << y << "," << x << "," << c;
        }
      }
    }
  }
  // The +-32/255 shifts reach past both ends, so the clip is exercised.
  EXPECT_GT(clipped_low, 0);
  EXPECT_GT(clipped_high, 0);
}

TEST(Preprocess, DctScalingDecodesLessForNearlyTheSameOutput) {
  const std::string jpeg = *encode_jpeg(smooth_image(640, 800), 95);
  PreprocessOptions options;
  options.training = false;
  options.height = options.width = 64;
  PreprocessScratch scratch;
  Rng rng(0);
  std::vector<float> scaled(64 * 64 * 3), full(64 * 64 * 3);
  PreprocessTrace trace;
  ASSERT_TRUE(preprocess_image(jpeg, {}, options, rng, &scratch, scaled.data(), &trace).ok());
  EXPECT_EQ(trace.scale_denom, 8);  // crop 560x700 -> 64x64: 8x is still >= the output
  options.allow_dct_scaling = false;
  ASSERT_TRUE(preprocess_image(jpeg, {}, options, rng, &scratch, full.data(), &trace).ok());
  EXPECT_EQ(trace.scale_denom, 1);
  double diff = 0;
  for (size_t i = 0; i < full.size(); ++i) diff += std::abs(scaled[i] - full[i]);
  EXPECT_LT(diff / full.size(), 0.03);  // on the [-1, 1] scale
}

TEST(Preprocess, VggSubtractsMeansOnUnitScalePixels) {
  RgbImage image;
  image.height = 40;
  image.width = 60;
  image.pixels.assign(40 * 60 * 3, 204);  // 0.8 after conversion to [0, 1]
  const std::string png = *encode_png(image);
  PreprocessOptions options;
  options.kind = PreprocessOptions::Kind::vgg;
  options.height = options.width = 32;
  options.vgg_resize_side_min = 36;
  options.vgg_resize_side_max = 48;
  PreprocessScratch scratch;
  std::vector<float> out(32 * 32 * 3);
  for (bool training : {false, true}) {
    options.training = training;
    Rng rng(4);
    ASSERT_TRUE(preprocess_image(png, {}, options, rng, &scratch, out.data()).ok());
    EXPECT_NEAR(out[0], (0.8 - 123.68) / 128, 1e-4);
    EXPECT_NEAR(out[1], (0.8 - 116.78) / 128, 1e-4);
    EXPECT_NEAR(out[out.size() - 1], (0.8 - 103.94) / 128, 1e-4);
  }
  options.vgg_resize_side_min = options.vgg_resize_side_max = 16;  // smaller than the crop
  Rng rng(4);
  EXPECT_FALSE(preprocess_image(png, {}, options, rng, &scratch, out.data()).ok());
}

TEST(Preprocess, UndecodableImageIsAnError) {
  PreprocessOptions options;
  PreprocessScratch scratch;
  Rng rng(0);
  std::vector<float> out(299 * 299 * 3);
  EXPECT_FALSE(preprocess_image("garbage", {}, options, rng, &scratch, out.data()).ok());
  const std::string jpeg = *encode_jpeg(smooth_image(64, 64), 90);
  EXPECT_FALSE(
      preprocess_image(jpeg.substr(0, jpeg.size() / 3), {}, options, rng, &scratch, out.data())
          .ok());
}

}  // namespace
}  // namespace ic
