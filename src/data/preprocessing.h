// Inception and VGG image preprocessing with the semantics of the reference application's
// inception_preprocessing.py / vgg_preprocessing.py, fused into one pass that
// reads decoded 8-bit pixels and writes the model's float input [height, width, 3].
//
// Inception training: sample_distorted_bounding_box (TensorFlow's algorithm) -> crop ->
//   bilinear resize (TF1 resize_images: align_corners=False, no half-pixel centres) ->
//   random left-right flip -> fast colour distortion (brightness, Cb, Cr; clip [0,1]), or with
//   fast_color_distort = false TF-slim's distort_color (brightness, saturation; clip [0,1]) ->
//   (x - 0.5) * 2.
// Inception eval: central_crop(0.875) -> bilinear resize -> (x - 0.5) * 2.
// VGG (the reference's --preprocessing=vgg): see PreprocessOptions::Kind::vgg.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/image_codec.h"
#include "data/random.h"

namespace ic {

// An object box as fractions of the image, as in image/object/bbox/*.
struct BoundingBox {
  float ymin = 0, xmin = 0, ymax = 1, xmax = 1;
};

struct DistortedBoxOptions {
  float min_object_covered = 0.1f;
  float min_aspect_ratio = 3.0f / 4.0f, max_aspect_ratio = 4.0f / 3.0f;  // width / height
  float min_area = 0.05f, max_area = 1.0f;  // fractions of the image area
  int max_attempts = 100;
};

// TensorFlow's sample_distorted_bounding_box for an image of height x width: per attempt, an
// aspect ratio uniform in the range, a crop height uniform among the integers that fit the area
// range, a position uniform in the image; accepted when it covers at least min_object_covered
// of one box. After max_attempts failures, the whole image. No boxes = the whole image as the
// box. Error when a box coordinate is outside [0, 1].
Result<CropWindow> sample_distorted_bounding_box(int height, int width,
                                                 std::span<const BoundingBox> boxes,
                                                 const DistortedBoxOptions& options, Rng& rng);

// TensorFlow's central_crop: start = int((size - size * fraction) / 2), length = size - 2*start.
CropWindow central_crop_window(int height, int width, double fraction);

// TF1 bilinear resize of `crop` of an 8-bit RGB image to out_height x out_width, values kept in
// [0, 255] as float: source position = i * (crop_size / out_size), neighbours clamped to the
// crop. The plain form of the sampling the fused preprocess_image does; [out_h, out_w, 3].
void resize_bilinear(const RgbImage& image, CropWindow crop, int out_height, int out_width,
                     float* out);

// VGG's per-channel means (R, G, B) on the 0-255 scale.
inline constexpr float kVggMeans[3] = {123.68f, 116.78f, 103.94f};

struct PreprocessOptions {
  enum class Kind { inception, vgg };
  Kind kind = Kind::inception;
  bool training = true;
  int height = 299, width = 299;
  // Inception training.
  DistortedBoxOptions box;
  float brightness_delta = 32.0f / 255.0f;
  float cb_range = 0.1f, cr_range = 0.1f;
  // The reference's --use_fast_color_distort: true = the brightness + Cb/Cr jitter above;
  // false = distort_color(fast_mode=True): brightness U(-brightness_delta, brightness_delta),
  // then saturation x U(saturation_lower, saturation_upper) (data/color_ops.h).
  bool fast_color_distort = true;
  float saturation_lower = 0.5f, saturation_upper = 1.5f;
  float eval_central_fraction = 0.875f;
  // VGG: training resizes the shorter side to an integer uniform in [resize_side_min,
  // resize_side_max], eval to resize_side_min; then a random (eval: central) crop, a random flip
  // (training), and (x - mean) / 128 with the ImageNet means on the 0-255 scale applied to
  // pixels already in [0, 1] -- the reference application's quirk, kept on purpose.
  int vgg_resize_side_min = 300, vgg_resize_side_max = 600;
  // Decode JPEGs at 1/2, 1/4 or 1/8 scale in the DCT domain when the crop stays at least the
  // output size: same output size, much less decoding. Off = decode at full size always.
  bool allow_dct_scaling = true;
  // Images whose header claims more pixels are refused before decoding (0 = no limit).
  int64_t max_pixels = kDefaultMaxImagePixels;
};

// The kind a name ("inception" or "vgg", as --preprocessing and a checkpoint's metadata spell
// it) stands for; nullopt for any other name. preprocessing_name is the inverse.
std::optional<PreprocessOptions::Kind> preprocessing_kind(std::string_view name);
const char* preprocessing_name(PreprocessOptions::Kind kind);

// Per-thread buffers reused between images (no allocation in steady state).
struct PreprocessScratch {
  RgbImage decoded;                          // the decoded region of the image
  std::vector<float> source_row;             // one source row's needed columns, as floats
  std::vector<float> rows;                   // two horizontally resampled source rows
  std::vector<int32_t> tap_left, tap_right;  // per output (column, channel): source_row indices
  std::vector<float> tap_lerp;
  std::vector<float> bias_row, out_bias_row;  // the per-channel biases repeated along a row
};

// What preprocess_image did, for tests and statistics.
struct PreprocessTrace {
  CropWindow crop;      // in full-resolution source pixels
  int scale_denom = 1;  // DCT scaling used when decoding
  bool flipped = false;
};

// Decodes `encoded` (JPEG or PNG) and writes the preprocessed image [height, width, 3] to `out`.
// A JPEG is decoded only over the rows and columns the crop's resampling reads
// (decode_image_region_into), with the same pixels there as a full decode, so the output is the
// full decode's.
// `boxes` (may be empty) are the record's annotated object boxes, used by Inception training only.
// Random draws come from `rng` in a fixed order, so a per-record Rng gives reproducible output.
Status preprocess_image(std::string_view encoded, std::span<const BoundingBox> boxes,
                        const PreprocessOptions& options, Rng& rng, PreprocessScratch* scratch,
                        float* out, PreprocessTrace* trace = nullptr);

}  // namespace ic
