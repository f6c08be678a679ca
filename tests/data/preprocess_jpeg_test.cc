// preprocess_image on JPEGs, which it decodes only partly (the crop's region, at a DCT scale when
// the resize shrinks by 2x or more): the output must be the resampling of the FULL decode at that
// scale, written here from the definition in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "data/image_codec.h"
#include "data/preprocessing.h"

namespace ic {
namespace {

RgbImage wavy_image(int height, int width, uint64_t seed) {
  Rng rng(seed);
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const double v = 128 + 90 * std::sin(0.04 * (c + 1) * x + 0.05 * y) + rng.uniform(-25, 25);
        image.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return image;
}

struct SourceTap {
  int i0, i1;
  double lerp;
};

// Output index i of an axis over `crop_start`..+`crop_size` (full-resolution pixels), resized to
// `out_size`, read from a decode at 1/denom of the `full_size` image. TF1's legacy resize:
// position i * crop/out from the crop's start, neighbours clamped to the crop. At 1/denom, scaled
// pixel j covers full pixels [j*denom, (j+1)*denom), so full position p is (p - (denom-1)/2) /
// denom there, clamped to the scaled image.
SourceTap source_tap(int i, int crop_start, int crop_size, int out_size, int full_size, int denom) {
  const double p = i * static_cast<double>(crop_size) / out_size;
  if (denom == 1) {
    const int lo = static_cast<int>(std::floor(p));
    return {crop_start + std::min(lo, crop_size - 1), crop_start + std::min(lo + 1, crop_size - 1),
            p - lo};
  }
  const double q = (crop_start + p - 0.5 * (denom - 1)) / denom;
  const int lo = static_cast<int>(std::floor(q));
  const int last = (full_size + denom - 1) / denom - 1;
  return {std::clamp(lo, 0, last), std::clamp(lo + 1, 0, last), q - lo};
}

// The resized crop, [out_h, out_w, 3] on the 0..255 scale, flipped if asked.
std::vector<double> reference_output(const RgbImage& decoded, int full_h, int full_w,
                                     const PreprocessTrace& trace, int out_h, int out_w) {
  const CropWindow& crop = trace.crop;
  const int d = trace.scale_denom;
  std::vector<double> out(static_cast<size_t>(out_h) * out_w * 3);
  auto pixel = [&](int y, int x, int c) -> double {
    return decoded.pixels[(static_cast<size_t>(y) * decoded.width + x) * 3 + c];
  };
  for (int y = 0; y < out_h; ++y) {
    const SourceTap ty = source_tap(y, crop.y, crop.height, out_h, full_h, d);
    for (int x = 0; x < out_w; ++x) {
      const SourceTap tx = source_tap(x, crop.x, crop.width, out_w, full_w, d);
      const int dx = trace.flipped ? out_w - 1 - x : x;
      for (int c = 0; c < 3; ++c) {
        const double top =
            pixel(ty.i0, tx.i0, c) + (pixel(ty.i0, tx.i1, c) - pixel(ty.i0, tx.i0, c)) * tx.lerp;
        const double bottom =
            pixel(ty.i1, tx.i0, c) + (pixel(ty.i1, tx.i1, c) - pixel(ty.i1, tx.i0, c)) * tx.lerp;
        out[(static_cast<size_t>(y) * out_w + dx) * 3 + c] = top + (bottom - top) * ty.lerp;
      }
    }
  }
  return out;
}

// Float positions and FMA differ from the double reference by far less than a quarter level.
constexpr double kTolerance = 2e-3;  // on the [-1, 1] scale, where one level is 2/255

TEST(PreprocessJpeg, EvalEqualsResampledFullDecodeAtEveryScale) {
  const int full_h = 250, full_w = 330;
  const std::string jpeg = *encode_jpeg(wavy_image(full_h, full_w, 1), 90);
  PreprocessOptions options;
  options.training = false;
  PreprocessScratch scratch;
  for (const int size : {21, 40, 90, 160, 299}) {  // DCT scales 8, 4, 2, 1, 1 (upscaling)
    options.height = options.width = size;
    Rng rng(0);
    std::vector<float> out(static_cast<size_t>(size) * size * 3);
    PreprocessTrace trace;
    ASSERT_TRUE(preprocess_image(jpeg, {}, options, rng, &scratch, out.data(), &trace).ok());
    const RgbImage full = *decode_image(jpeg, trace.scale_denom);
    const std::vector<double> expected = reference_output(full, full_h, full_w, trace, size, size);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], (expected[i] / 255 - 0.5) * 2, kTolerance)
          << "size " << size << " denom " << trace.scale_denom << " at " << i;
    }
  }
}

// Random crops, flips and colour shifts: rebuild each output from the replayed draws.
TEST(PreprocessJpeg, TrainingEqualsResampledFullDecodeForRandomCrops) {
  const int full_h = 200, full_w = 264;
  const std::string jpeg = *encode_jpeg(wavy_image(full_h, full_w, 2), 90);
  PreprocessOptions options;
  options.height = 40;
  options.width = 48;
  PreprocessScratch scratch;
  int seen_denoms = 0;  // bit d set: scale 1/d was used
  std::vector<float> out(40 * 48 * 3);
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Rng rng(seed), replay(seed);
    PreprocessTrace trace;
    ASSERT_TRUE(preprocess_image(jpeg, {}, options, rng, &scratch, out.data(), &trace).ok());
    seen_denoms |= trace.scale_denom;
    EXPECT_EQ(trace.crop, *sample_distorted_bounding_box(full_h, full_w, {}, options.box, replay));
    EXPECT_EQ(trace.flipped, replay.coin());
    const float br = replay.uniform(-32.0f / 255, 32.0f / 255);
    const float cb = replay.uniform(-0.1f, 0.1f), cr = replay.uniform(-0.1f, 0.1f);
    const double offsets[3] = {1.402 * cr + br, -0.344136 * cb - 0.714136 * cr + br,
                               1.772 * cb + br};
    const RgbImage full = *decode_image(jpeg, trace.scale_denom);
    const std::vector<double> expected = reference_output(full, full_h, full_w, trace, 40, 48);
    for (size_t i = 0; i < out.size(); ++i) {
      const double v = std::clamp(expected[i] / 255 + offsets[i % 3], 0.0, 1.0);
      ASSERT_NEAR(out[i], (v - 0.5) * 2, kTolerance)
          << "seed " << seed << " denom " << trace.scale_denom << " at " << i;
    }
  }
  EXPECT_EQ(seen_denoms, 1 | 2 | 4);  // small crops at full scale, larger ones at 1/2 and 1/4
}

}  // namespace
}  // namespace ic
