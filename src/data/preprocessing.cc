#include "data/preprocessing.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "data/color_ops.h"
#include "data/resample_kernels.h"

namespace ic {
namespace {

// ---- sample_distorted_bounding_box (TensorFlow's sample_distorted_bounding_box_op.cc) ----

struct Rect {
  int min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  // In float: the int product overflows for a 60000x60000 header; both factors are exact
  // floats (< 2^24), so the single rounding equals the exact product's.
  float area() const {
    return static_cast<float>(max_x - min_x) * static_cast<float>(max_y - min_y);
  }
  Rect intersect(const Rect& r) const {
    Rect out{std::max(min_x, r.min_x), std::max(min_y, r.min_y), std::min(max_x, r.max_x),
             std::min(max_y, r.max_y)};
    if (out.min_x > out.max_x || out.min_y > out.max_y) return Rect{};
    return out;
  }
};

bool satisfies_overlap(const Rect& crop, float min_object_covered, const std::vector<Rect>& boxes) {
  if (crop.area() < 1.0f) return false;
  for (const Rect& box : boxes) {
    const float object_area = box.area();
    if (object_area < 1.0f) continue;
    if (crop.intersect(box).area() / object_area >= min_object_covered) return true;
  }
  return false;
}

// One attempt: the crop height is uniform among the integers whose rounded width and area fit;
// then a position uniform in [0, size - crop) (TensorFlow excludes the last position).
bool generate_random_crop(int width, int height, float min_relative_area, float max_relative_area,
                          float aspect_ratio, Rng& rng, Rect* crop) {
  if (max_relative_area <= 0 || aspect_ratio <= 0 || width <= 0 || height <= 0 ||
      min_relative_area > max_relative_area) {
    return false;
  }
  const float min_area = min_relative_area * width * height;
  const float max_area = max_relative_area * width * height;
  int crop_height = static_cast<int>(std::lrint(std::sqrt(min_area / aspect_ratio)));
  int max_height = static_cast<int>(std::lrint(std::sqrt(max_area / aspect_ratio)));
  if (std::lrint(max_height * aspect_ratio) > width) {
    const float kEps = 0.0000001f;
    max_height = static_cast<int>((width + 0.5 - kEps) / aspect_ratio);
    if (std::lrint(max_height * aspect_ratio) > width) max_height -= 1;
  }
  max_height = std::min(max_height, height);
  crop_height = std::min(crop_height, max_height);
  if (crop_height < max_height) {
    crop_height +=
        static_cast<int>(rng.uniform_int(static_cast<uint32_t>(max_height - crop_height + 1)));
  }
  int crop_width = static_cast<int>(std::lrint(crop_height * aspect_ratio));
  // Rounding may leave the area just outside the range: try one row more, then one less.
  float area = static_cast<float>(crop_width) * static_cast<float>(crop_height);
  if (area < min_area) {
    crop_height += 1;
    crop_width = static_cast<int>(std::lrint(crop_height * aspect_ratio));
    area = static_cast<float>(crop_width) * static_cast<float>(crop_height);
  }
  if (area > max_area) {
    crop_height -= 1;
    crop_width = static_cast<int>(std::lrint(crop_height * aspect_ratio));
    area = static_cast<float>(crop_width) * static_cast<float>(crop_height);
  }
  if (area < min_area || area > max_area || crop_width > width || crop_height > height ||
      crop_width <= 0 || crop_height <= 0) {
    return false;
  }
  const int y = crop_height < height ? static_cast<int>(rng.uniform_int(height - crop_height)) : 0;
  const int x = crop_width < width ? static_cast<int>(rng.uniform_int(width - crop_width)) : 0;
  *crop = Rect{x, y, x + crop_width, y + crop_height};
  return true;
}

// ---- Separable bilinear resampling, fused with the per-pixel affine maps ----

// One axis of a resampling: output index i reads the source at full-resolution position
//   p = (first + i) * scale + offset   (TF1 legacy resize: no half-pixel centres)
// relative to `origin`, with neighbours clamped to [origin, origin + extent).
struct AxisSpec {
  int origin = 0, extent = 0;
  float scale = 1;
  int first = 0;
  float offset = 0;
  int base = 0;  // where the decoded pixels start: taps index the decoded region from here
};

// The same axis in an image decoded at 1/denom scale: scaled pixel j covers full-resolution
// pixels [j*denom, (j+1)*denom), so full position p is scaled position (p - (denom-1)/2) / denom.
// Clamping then uses the whole scaled image (a border neighbour may come from just outside the
// crop; invisible at these scales).
AxisSpec scale_axis(const AxisSpec& spec, int denom, int scaled_size) {
  if (denom == 1) return spec;
  AxisSpec out;
  out.origin = 0;
  out.extent = scaled_size;
  out.scale = spec.scale / static_cast<float>(denom);
  out.first = spec.first;
  out.offset = (static_cast<float>(spec.origin) + spec.offset - 0.5f * (denom - 1)) / denom;
  out.base = spec.base;
  return out;
}

struct Tap {
  int32_t i0, i1;
  float lerp;
};

Tap axis_tap(const AxisSpec& spec, int i) {
  const float p = static_cast<float>(spec.first + i) * spec.scale + spec.offset;
  const float floor_p = std::floor(p);
  const int lo = static_cast<int>(floor_p);
  const int last = spec.extent - 1;
  return Tap{spec.origin + std::clamp(lo, 0, last) - spec.base,
             spec.origin + std::clamp(lo + 1, 0, last) - spec.base, p - floor_p};
}

// The source pixels [first, last] an axis reads for `count` outputs: positions grow with i.
std::pair<int, int> axis_span(const AxisSpec& spec, int count) {
  return {axis_tap(spec, 0).i0, axis_tap(spec, count - 1).i1};
}

// out = clip?(v * in_scale + bias[c]) * out_scale + out_bias[c], v the resampled 0..255 value.
struct PixelMap {
  float in_scale = 1;
  float bias[3] = {0, 0, 0};
  bool clip01 = false;
  float out_scale = 1;
  float out_bias[3] = {0, 0, 0};
};

// TF's bilinear formula: top = tl + (tr - tl) * xl; bottom likewise; top + (bottom - top) * yl.
// The horizontal pass makes `top`/`bottom` rows once per source row and reuses them while
// consecutive output rows share source rows.
void resample(const RgbImage& src, const AxisSpec& ys, const AxisSpec& xs, int out_h, int out_w,
              bool flip, const PixelMap& map, PreprocessScratch* scratch, float* out) {
  const ResampleKernels& kernels = resample_kernels();
  const size_t row_floats = static_cast<size_t>(out_w) * 3;
  // Taps flat over (column, channel), indexing a float copy of the source columns the row uses:
  // one gather-and-lerp loop over the whole row, whatever the channel.
  const int first_column = axis_tap(xs, 0).i0;
  const int last_column = axis_tap(xs, out_w - 1).i1;
  scratch->tap_left.resize(row_floats);
  scratch->tap_right.resize(row_floats);
  scratch->tap_lerp.resize(row_floats);
  for (int x = 0; x < out_w; ++x) {
    const Tap tap = axis_tap(xs, x);
    const int dst = flip ? out_w - 1 - x : x;  // a flip after resizing = reading columns reversed
    for (int c = 0; c < 3; ++c) {
      scratch->tap_left[3 * dst + c] = (tap.i0 - first_column) * 3 + c;
      scratch->tap_right[3 * dst + c] = (tap.i1 - first_column) * 3 + c;
      scratch->tap_lerp[3 * dst + c] = tap.lerp;
    }
  }
  const size_t source_floats = static_cast<size_t>(last_column - first_column + 1) * 3;
  scratch->source_row.resize(source_floats);
  scratch->rows.resize(row_floats * 2);
  float* cached[2] = {scratch->rows.data(), scratch->rows.data() + row_floats};
  int cached_row[2] = {-1, -1};
  const size_t src_stride = static_cast<size_t>(src.width) * 3;
  auto horizontal = [&](int row) -> const float* {
    if (cached_row[0] == row) return cached[0];
    if (cached_row[1] == row) return cached[1];
    // Evict the older entry: rows are requested in increasing order, top before bottom, so
    // the row just computed for `top` always survives computing `bottom`.
    std::swap(cached[0], cached[1]);
    std::swap(cached_row[0], cached_row[1]);
    cached_row[0] = row;
    const uint8_t* line = src.pixels.data() + static_cast<size_t>(row) * src_stride;
    kernels.widen_row(line + static_cast<size_t>(first_column) * 3, source_floats,
                      scratch->source_row.data());
    kernels.lerp_gathered(scratch->source_row.data(), scratch->tap_left.data(),
                          scratch->tap_right.data(), scratch->tap_lerp.data(), row_floats,
                          cached[0]);
    return cached[0];
  };
  // Biases laid out like a row (R,G,B,R,G,B...) so the vertical pass is one flat loop.
  scratch->bias_row.resize(row_floats);
  scratch->out_bias_row.resize(row_floats);
  for (size_t k = 0; k < row_floats; ++k) {
    scratch->bias_row[k] = map.bias[k % 3];
    scratch->out_bias_row[k] = map.out_bias[k % 3];
  }
  for (int y = 0; y < out_h; ++y) {
    const Tap tap = axis_tap(ys, y);
    const float* top = horizontal(tap.i0);
    const float* bottom = horizontal(tap.i1);
    kernels.lerp_rows_affine(top, bottom, tap.lerp, map.in_scale, scratch->bias_row.data(),
                             map.clip01, map.out_scale, scratch->out_bias_row.data(), row_floats,
                             out + static_cast<size_t>(y) * row_floats);
  }
}

// The largest DCT scale (1, 2, 4, 8) that keeps at least one source pixel per output pixel.
int choose_scale_denom(float scale_y, float scale_x) {
  int denom = 1;
  while (denom < 8 && scale_y >= 2.0f * denom && scale_x >= 2.0f * denom) denom *= 2;
  return denom;
}

struct ImageSize {
  int height = 0, width = 0;
};

Result<ImageSize> probe_size(std::string_view encoded, int64_t max_pixels,
                             PreprocessScratch* scratch, bool* decoded) {
  *decoded = false;
  if (sniff_image_format(encoded) == ImageFormat::jpeg) {
    IC_ASSIGN_OR_RETURN(const JpegHeader header, read_jpeg_header(encoded));
    return ImageSize{header.height, header.width};
  }
  IC_RETURN_IF_ERROR(decode_image_into(encoded, 1, &scratch->decoded, max_pixels));
  *decoded = true;
  return ImageSize{scratch->decoded.height, scratch->decoded.width};
}

}  // namespace

Result<CropWindow> sample_distorted_bounding_box(int height, int width,
                                                 std::span<const BoundingBox> boxes,
                                                 const DistortedBoxOptions& options, Rng& rng) {
  std::vector<Rect> rects;
  rects.reserve(boxes.size() + 1);
  for (const BoundingBox& box : boxes) {
    for (float v : {box.ymin, box.xmin, box.ymax, box.xmax}) {
      if (!(v >= 0.0f && v <= 1.0f)) {
        return error("bounding box coordinate ", v, " is outside [0, 1]");
      }
    }
    rects.push_back(Rect{static_cast<int>(box.xmin * width), static_cast<int>(box.ymin * height),
                         static_cast<int>(box.xmax * width), static_cast<int>(box.ymax * height)});
  }
  const Rect image{0, 0, width, height};
  if (rects.empty()) rects.push_back(image);
  Rect crop = image;
  for (int attempt = 0; attempt < options.max_attempts; ++attempt) {
    const float aspect_ratio =
        rng.uniform_float() * (options.max_aspect_ratio - options.min_aspect_ratio) +
        options.min_aspect_ratio;
    Rect candidate;
    if (generate_random_crop(width, height, options.min_area, options.max_area, aspect_ratio, rng,
                             &candidate) &&
        satisfies_overlap(candidate, options.min_object_covered, rects)) {
      crop = candidate;
      break;
    }
  }
  return CropWindow{crop.min_y, crop.min_x, crop.max_y - crop.min_y, crop.max_x - crop.min_x};
}

CropWindow central_crop_window(int height, int width, double fraction) {
  const int y = static_cast<int>((height - height * fraction) / 2);
  const int x = static_cast<int>((width - width * fraction) / 2);
  return CropWindow{y, x, height - 2 * y, width - 2 * x};
}

void resize_bilinear(const RgbImage& image, CropWindow crop, int out_height, int out_width,
                     float* out) {
  PreprocessScratch scratch;
  const AxisSpec ys{crop.y, crop.height, static_cast<float>(crop.height) / out_height, 0, 0};
  const AxisSpec xs{crop.x, crop.width, static_cast<float>(crop.width) / out_width, 0, 0};
  resample(image, ys, xs, out_height, out_width, false, PixelMap{}, &scratch, out);
}

Status preprocess_image(std::string_view encoded, std::span<const BoundingBox> boxes,
                        const PreprocessOptions& options, Rng& rng, PreprocessScratch* scratch,
                        float* out, PreprocessTrace* trace) {
  IC_RETURN_IF_ERROR(check_image_pixels(encoded, options.max_pixels));
  bool already_decoded = false;
  IC_ASSIGN_OR_RETURN(const ImageSize size,
                      probe_size(encoded, options.max_pixels, scratch, &already_decoded));
  if (size.height <= 0 || size.width <= 0) return error("image has no pixels");
  const int out_h = options.height, out_w = options.width;

  // Geometry and pixel map, in full-resolution source coordinates.
  AxisSpec ys, xs;
  PixelMap map;
  CropWindow crop;
  bool flip = false;
  bool slim_color = false;  // TF-slim distort_color after resampling (fast_color_distort off)
  SlimColorDistortion color;
  if (options.kind == PreprocessOptions::Kind::inception) {
    if (options.training) {
      IC_ASSIGN_OR_RETURN(
          crop, sample_distorted_bounding_box(size.height, size.width, boxes, options.box, rng));
      flip = rng.coin();
      if (options.fast_color_distort) {
        // Fast colour distortion on [0, 1] values: a brightness offset plus a Cb/Cr shift
        // expressed as per-channel offsets (YCbCr->RGB coefficients), then clip to [0, 1].
        const float br = rng.uniform(-options.brightness_delta, options.brightness_delta);
        const float cb = rng.uniform(-options.cb_range, options.cb_range);
        const float cr = rng.uniform(-options.cr_range, options.cr_range);
        map.bias[0] = 1.402f * cr + br;
        map.bias[1] = -0.344136f * cb - 0.714136f * cr + br;
        map.bias[2] = 1.772f * cb + br;
        map.clip01 = true;
      } else {
        // Saturation is not affine in RGB: resample to [0, 1] here, distort and scale after.
        slim_color = true;
        color.ordering = 0;  // fast_mode=True: one case in apply_with_random_selector
        color.brightness_delta = rng.uniform(-options.brightness_delta, options.brightness_delta);
        color.saturation_factor = rng.uniform(options.saturation_lower, options.saturation_upper);
      }
    } else {
      crop = central_crop_window(size.height, size.width, options.eval_central_fraction);
    }
    map.in_scale = 1.0f / 255.0f;
    if (!slim_color) {
      map.out_scale = 2.0f;  // (x - 0.5) * 2
      for (float& b : map.out_bias) b = -1.0f;
    }
    ys = AxisSpec{crop.y, crop.height, static_cast<float>(crop.height) / out_h, 0, 0};
    xs = AxisSpec{crop.x, crop.width, static_cast<float>(crop.width) / out_w, 0, 0};
  } else {
    // VGG: aspect-preserving resize of the shorter side, then a crop of the output size.
    const int side = options.training
                         ? options.vgg_resize_side_min +
                               static_cast<int>(rng.uniform_int(static_cast<uint32_t>(
                                   options.vgg_resize_side_max - options.vgg_resize_side_min + 1)))
                         : options.vgg_resize_side_min;
    const float h = static_cast<float>(size.height), w = static_cast<float>(size.width);
    const float resize_scale = h > w ? side / w : side / h;
    const int new_h = static_cast<int>(std::nearbyint(h * resize_scale));
    const int new_w = static_cast<int>(std::nearbyint(w * resize_scale));
    if (new_h < out_h || new_w < out_w) {
      return error("VGG resize to ", new_h, "x", new_w, " is smaller than the ", out_h, "x", out_w,
                   " crop");
    }
    int oy = (new_h - out_h) / 2, ox = (new_w - out_w) / 2;
    if (options.training) {
      oy = static_cast<int>(rng.uniform_int(static_cast<uint32_t>(new_h - out_h + 1)));
      ox = static_cast<int>(rng.uniform_int(static_cast<uint32_t>(new_w - out_w + 1)));
      flip = rng.coin();
    }
    const float scale_y = h / new_h, scale_x = w / new_w;
    ys = AxisSpec{0, size.height, scale_y, oy, 0};
    xs = AxisSpec{0, size.width, scale_x, ox, 0};
    crop = CropWindow{static_cast<int>(oy * scale_y), static_cast<int>(ox * scale_x),
                      static_cast<int>(out_h * scale_y), static_cast<int>(out_w * scale_x)};
    map.in_scale = 1.0f / 255.0f;
    map.out_scale = 1.0f / 128.0f;
    for (int c = 0; c < 3; ++c) map.bias[c] = -kVggMeans[c];
  }

  // Decode only the pixels the resampling reads, at a reduced DCT scale when it shrinks by 2x or
  // more anyway.
  int denom = 1;
  if (!already_decoded && options.allow_dct_scaling) {
    denom = choose_scale_denom(ys.scale, xs.scale);
  }
  ys = scale_axis(ys, denom, jpeg_scaled_size(size.height, denom));
  xs = scale_axis(xs, denom, jpeg_scaled_size(size.width, denom));
  const auto [y_first, y_last] = axis_span(ys, out_h);
  const auto [x_first, x_last] = axis_span(xs, out_w);
  CropWindow decoded{0, 0, size.height, size.width};
  if (!already_decoded) {
    const CropWindow wanted{y_first, x_first, y_last - y_first + 1, x_last - x_first + 1};
    IC_RETURN_IF_ERROR(decode_image_region_into(encoded, denom, wanted, &scratch->decoded, &decoded,
                                                options.max_pixels));
  }
  const RgbImage& image = scratch->decoded;
  if (decoded.y > y_first || decoded.x > x_first || decoded.y + image.height <= y_last ||
      decoded.x + image.width <= x_last) {
    return error("decoded rows ", decoded.y, "+", image.height, ", columns ", decoded.x, "+",
                 image.width, " miss the needed rows ", y_first, "..", y_last, ", columns ",
                 x_first, "..", x_last);
  }
  ys.base = decoded.y;
  xs.base = decoded.x;
  resample(image, ys, xs, out_h, out_w, flip, map, scratch, out);
  if (slim_color) {
    const size_t pixels = static_cast<size_t>(out_h) * out_w;
    apply_slim_color_distortion(color, out, pixels);
    for (size_t i = 0; i < pixels * 3; ++i) out[i] = (out[i] - 0.5f) * 2.0f;
  }
  if (trace != nullptr) *trace = PreprocessTrace{crop, denom, flip};
  return Status();
}

std::optional<PreprocessOptions::Kind> preprocessing_kind(std::string_view name) {
  for (auto kind : {PreprocessOptions::Kind::inception, PreprocessOptions::Kind::vgg})
    if (name == preprocessing_name(kind)) return kind;
  return std::nullopt;
}

const char* preprocessing_name(PreprocessOptions::Kind kind) {
  return kind == PreprocessOptions::Kind::vgg ? "vgg" : "inception";
}

}  // namespace ic
