// The reference's serving input inside the exported graph: a batch of encoded JPEG strings
// `image_bytes` [-1], each decoded and given the model's evaluation preprocessing by a
// functional While loop over the batch (the graph form of tf.map_fn), stacked into
// [-1, height, width, 3]. The preprocessing is data/preprocessing.h's, in TensorFlow ops:
//   inception: convert to [0, 1], central_crop(0.875), TF1 bilinear resize to height x width,
//              (x - 0.5) * 2;
//   vgg:       TF1 bilinear resize of the shorter side to vgg_resize_side_min (the other in
//              proportion, rounded half to even), the central height x width crop, then
//              (x / 255 - mean) / 128.
#pragma once

#include <string>

#include "data/preprocessing.h"
#include "infer/tf_graph_def.h"

namespace ic {

struct ImageBytesInput {
  std::string placeholder;  // the string input's node
  std::string images;       // the preprocessed batch: a tensor name "node:k"
};

// Adds the placeholder, the loop's two functions (to the graph's library) and the loop.
// `eval` gives the kind, the output size and the kind's parameters.
ImageBytesInput add_image_bytes_input(TfGraphDefBuilder& graph, const PreprocessOptions& eval);

}  // namespace ic
