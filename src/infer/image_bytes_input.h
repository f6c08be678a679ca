// The reference's serving input inside the exported graph: a batch of encoded JPEG strings
// `image_bytes` [-1], each decoded and given the evaluation preprocessing (convert to [0, 1],
// central_crop(0.875), TF1 bilinear resize to height x width, (x - 0.5) * 2) by a functional
// While loop over the batch (the graph form of tf.map_fn), stacked into [-1, height, width, 3].
#pragma once

#include <string>

#include "infer/tf_graph_def.h"

namespace ic {

struct ImageBytesInput {
  std::string placeholder;  // the string input's node
  std::string images;       // the preprocessed batch: a tensor name "node:k"
};

// Adds the placeholder, the loop's two functions (to the graph's library) and the loop.
ImageBytesInput add_image_bytes_input(TfGraphDefBuilder& graph, int64_t height, int64_t width,
                                      double central_fraction);

}  // namespace ic
