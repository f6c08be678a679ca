// TF-slim's colour distortion for --use_fast_color_distort=false (step 5 of
// inception_preprocessing.preprocess_for_train): the reference's
// inception_preprocessing.distort_color(image, ordering, fast_mode=True), i.e.
// tf.image.random_brightness(32/255) and tf.image.random_saturation(0.5, 1.5) in one of two
// orders, then a clip to [0, 1]. The random values are drawn by the caller, so the same
// per-record Rng keeps runs reproducible.
#pragma once

#include <cstddef>

namespace ic {

// TensorFlow's AdjustSaturation CPU kernel on one RGB pixel (any float values, as after a
// brightness shift): RGB -> HSV (v = max, s = (max - min) / v, or 0 when v <= 0), s scaled by
// `factor` and clipped to [0, 1], HSV -> RGB, all in float as the kernel does. rgb: [3].
void adjust_saturation_pixel(float* rgb, float factor);

struct SlimColorDistortion {
  // 0: brightness then saturation; 1: saturation then brightness. The reference calls
  // distort_color with fast_mode=True, so apply_with_random_selector has a single case and
  // the ordering is always 0; 1 is here for completeness and tests.
  int ordering = 0;
  float brightness_delta = 0;   // added to every channel (adjust_brightness, no clip)
  float saturation_factor = 1;  // adjust_saturation's factor
};

// Applies `distortion` in place to pixel_count RGB pixels [pixel_count, 3] with values in
// [0, 1], and clips the result to [0, 1] as distort_color does.
void apply_slim_color_distortion(const SlimColorDistortion& distortion, float* pixels,
                                 size_t pixel_count);

}  // namespace ic
