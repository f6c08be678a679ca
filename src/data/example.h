// tf.Example records of ImageNet images, with the feature keys and types of TensorFlow's
// converter (imagenet_to_gcs.py) and the Inception input parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ic {

struct ImageExample {
  std::string encoded;             // image/encoded (JPEG bytes)
  std::string format = "JPEG";     // image/format
  std::string colorspace = "RGB";  // image/colorspace
  int64_t channels = 3;            // image/channels
  int64_t height = 0;              // image/height
  int64_t width = 0;               // image/width
  int64_t label = -1;              // image/class/label (1..N; -1 when absent)
  std::string synset;              // image/class/synset
  std::string text;                // image/class/text
  std::string filename;            // image/filename
  // image/object/bbox/{ymin,xmin,ymax,xmax} (fractions of the image) and
  // image/object/class/label; empty when the record has none.
  std::vector<float> bbox_ymin, bbox_xmin, bbox_ymax, bbox_xmax;
  std::vector<int64_t> bbox_label;
};

// Serialises a tf.Example with every non-empty field above under its TensorFlow key.
std::string encode_image_example(const ImageExample& example);

// Parses a serialised tf.Example. Missing keys take the parser's defaults (label -1,
// format "jpeg" as TensorFlow's parser would, empty strings and lists, 0 for channels,
// height and width); a key with the wrong type, a scalar key without exactly one value,
// bbox lists of different lengths or a malformed message is an error.
Result<ImageExample> decode_image_example(std::string_view bytes);

}  // namespace ic
