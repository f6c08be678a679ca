// A training record's way from bytes to the model's input (data/input_pipeline.cc's
// process()): tf.Example decoding, then preprocess_image with the record's boxes, which decodes
// only the crop's region of the JPEG. The input is one serialized tf.Example; its label picks the
// preprocessing (bits 0-1: Inception training, Inception training with TF-slim's colour
// distortion, Inception eval, VGG; bit 2: VGG eval). Outputs must be finite.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "data/example.h"
#include "data/preprocessing.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/image_limits.h"
#include "fuzz/quiet_protobuf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ic::Result<ic::ImageExample> example = ic::decode_image_example(ic::fuzz::as_view(data, size));
  if (!example.ok()) return 0;
  std::vector<ic::BoundingBox> boxes;
  for (size_t i = 0; i < example->bbox_ymin.size(); ++i) {  // the lists have equal lengths
    boxes.push_back(ic::BoundingBox{example->bbox_ymin[i], example->bbox_xmin[i],
                                    example->bbox_ymax[i], example->bbox_xmax[i]});
  }
  ic::PreprocessOptions options;
  options.height = 29;  // small and not square: many images are cropped and scaled down
  options.width = 23;
  options.vgg_resize_side_min = 30;
  options.vgg_resize_side_max = 45;
  // The decoders refuse an image claiming more from its header, before allocating.
  options.max_pixels = ic::fuzz::kMaxImagePixels;
  const uint64_t mode = static_cast<uint64_t>(example->label);
  switch (mode & 3) {
    case 0: break;
    case 1: options.fast_color_distort = false; break;
    case 2: options.training = false; break;
    default:
      options.kind = ic::PreprocessOptions::Kind::vgg;
      options.training = (mode & 4) == 0;
      break;
  }
  ic::Rng rng(static_cast<uint64_t>(size), mode);
  ic::PreprocessScratch scratch;
  std::vector<float> out(static_cast<size_t>(options.height) * options.width * 3);
  if (!ic::preprocess_image(example->encoded, boxes, options, rng, &scratch, out.data()).ok()) {
    return 0;
  }
  for (const float v : out) {
    if (!std::isfinite(v)) std::abort();
  }
  return 0;
}
