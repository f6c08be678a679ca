// The inference network of a trained model as a TensorFlow 1 graph for a SavedModel
// (what saved_model.pb holds): one resource variable per parameter under its TF-slim name,
// the ops of our graph translated one by one, a SaverDef whose restore op reads
// variables/variables, and two signatures with the same outputs:
//   serving_default  in:  images         float32 [-1,H,W,3], the evaluation preprocessing's
//                                        output (Inception's: in [-1, 1])
//   classify         in:  image_bytes    string [-1], encoded JPEGs, preprocessed inside the
//                                        graph (image_bytes_input.h), as the reference's
//                   out:  classes        int64 [-1]          argmax of the logits
//                         probabilities  float32 [-1,classes] softmax of the logits
// Only what the logits need is translated (the auxiliary head is left out).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "data/preprocessing.h"
#include "graph/graph.h"
#include "proto/saved_model.pb.h"

namespace ic {

inline constexpr char kServingSignatureKey[] = "serving_default";
// The reference's signature key; its input is encoded JPEGs.
inline constexpr char kClassifySignatureKey[] = "classify";
inline constexpr char kImageBytesInputKey[] = "image_bytes";
inline constexpr char kServingPredictMethod[] = "tensorflow/serving/predict";
inline constexpr char kServingTag[] = "serve";
inline constexpr char kImagesInputKey[] = "images";
inline constexpr char kClassesOutputKey[] = "classes";
inline constexpr char kProbabilitiesOutputKey[] = "probabilities";

struct SavedModelGraph {
  tensorflow::SavedModel saved_model;  // one MetaGraphDef, tag "serve"
  // The parameters the graph reads, by TF-slim name: the tensors variables/ must hold.
  std::vector<std::string> variables;
};

// Translates an inference graph (Graph::training false, any batch size: the exported batch
// dimension is -1); `preprocessing` is the evaluation preprocessing image_bytes gets (the
// model's, as its checkpoint records it). An op without a translation (a loss, training-mode
// batch norm) is an error naming the node.
Result<SavedModelGraph> saved_model_graph(
    const Graph& graph, PreprocessOptions::Kind preprocessing = PreprocessOptions::Kind::inception);

}  // namespace ic
