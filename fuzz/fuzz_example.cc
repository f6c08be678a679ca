// tf.Example decoding (data/example.h): the input is one serialized record. A decoded example
// must survive a round trip through encode_image_example.
#include <cstdlib>

#include "data/example.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/quiet_protobuf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ic::Result<ic::ImageExample> example = ic::decode_image_example(ic::fuzz::as_view(data, size));
  if (!example.ok()) return 0;
  // Encoding drops empty strings and non-positive sizes (they read back as the defaults), so
  // only the fields it always keeps are compared.
  ic::Result<ic::ImageExample> again = ic::decode_image_example(ic::encode_image_example(*example));
  if (!again.ok()) std::abort();
  if (again->encoded != example->encoded || again->bbox_ymin.size() != example->bbox_ymin.size() ||
      again->bbox_label != example->bbox_label || again->synset != example->synset) {
    std::abort();
  }
  return 0;
}
