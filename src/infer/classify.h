// Top-5 predictions of a trained model for image files or preprocessed arrays: what the
// classify program does, as a library function so tests can call it.
//   weights:  the latest checkpoint of model_dir, or one checkpoint file; the EMA shadows
//             when the checkpoint has them (as evaluation uses), else the raw weights
//   inputs:   JPEG/PNG files (decoded, the checkpoint's evaluation preprocessing at its image
//             size: Inception's central crop 0.875, bilinear resize, [-1, 1], or VGG's when
//             its metadata says so) or .npy float32 arrays already preprocessed, [H,W,3] or
//             [N,H,W,3]
//   precision: runtime/precision.h; int8 needs an int8 export (else invalid_argument naming
//             the checkpoint), bfloat16 computes in float32 where the backend has no bf16
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "data/image_codec.h"
#include "graph/inference_passes.h"
#include "infer/top_classes.h"
#include "runtime/precision.h"

namespace ic {

struct ClassifyOptions {
  std::string model_dir;   // used when checkpoint is empty
  std::string checkpoint;  // a checkpoint: model.ckpt-N (bundle), its .index, or a .safetensors
  std::vector<std::string> inputs;
  int top_k = 5;
  // Images whose header claims more pixels are refused before decoding.
  int64_t max_image_pixels = kDefaultMaxImagePixels;
  InferencePrecision precision = InferencePrecision::float32;
};

struct ClassifyResult {
  struct Prediction {
    std::string input;  // file name, with "[i]" for row i of a multi-image .npy
    std::vector<std::pair<int64_t, float>> top;  // (label, probability), best first
  };
  std::vector<Prediction> predictions;
  std::vector<int64_t> logits_shape;  // [images, num_classes]
  std::vector<float> logits;          // raw logits, row-major
  std::string checkpoint;             // the file used
  int64_t global_step = 0;
  // What the inference passes did: an int8 graph's layers kept in float32 because they timed
  // faster there, a bf16 graph's float32 convolutions (docs/int8.md, docs/serving.md).
  InferencePassStats graph_stats;
};

Result<ClassifyResult> classify(const ClassifyOptions& options, Backend& backend);

// Label names: lines "<label> <name>" (or "<label>\t<name>"), or plain names where line i
// (from 0) names label i. Errors name the file.
Result<std::map<int64_t, std::string>> read_label_names(const std::string& path);

}  // namespace ic
