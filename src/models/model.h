// The networks this project trains, built as static graphs with their reference's scope names,
// variable names and shapes (so checkpoints and per-layer numbers match the reference's):
//   inception_v3     scope "InceptionV3"     (contrib slim nets/inception_v3.py, with AuxLogits)
//   inception_v4     scope "InceptionV4"     (tensorflow/tpu inception_v4_model.py, AuxLogits)
//   resnet50         scope "resnet_v1_50"    (torchvision's ResNet-50 v1.5 structure, slim names)
//   mobilenet_v1     scope "MobilenetV1"     (TF-slim nets/mobilenet_v1.py)
//   mobilenet_v2     scope "MobilenetV2"     (TF-slim nets/mobilenet/mobilenet_v2.py)
//   densenet121      scope "densenet121"     (Keras DenseNet121, Keras names)
//   squeezenet1_0    scope "squeezenet1_0"   (torchvision SqueezeNet 1.0, module-path names)
//   squeezenet1_1    scope "squeezenet1_1"   (torchvision SqueezeNet 1.1, module-path names)
//   efficientnet_b0  scope "efficientnet_b0" (Keras EfficientNetB0, Keras names)
// models/model_spec.cc is the registry; docs/models.md gives the model zoo's sources.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace ic {

struct ModelOptions {
  std::string name;  // a registered name: inception_v3, resnet50, mobilenet_v1, ... (above)
  int64_t batch_size = 32;
  int height = 299, width = 299;
  int64_t num_classes = 1001;
  // Channel widths become max(int(d * depth_multiplier), min_depth), as TF-slim's depth()
  // (mobilenet_v2 and efficientnet_b0: make_divisible(d * depth_multiplier, 8, min_depth), as
  // slim's mobilenet and Keras' round_filters). TF-slim only offers this for v3; here every
  // model takes it, so tests can build tiny nets.
  float depth_multiplier = 1.f;
  int min_depth = 16;
  bool training = true;      // BN batch statistics and dropout; false: inference behaviour
  bool aux_logits = true;    // Inception only (the other networks have no auxiliary head)
  bool build_losses = true;  // false: no labels input and no loss terms (classify, export)
  float dropout_keep_prob = 0.8f;
  float batch_norm_decay = 0.996f;
  float batch_norm_epsilon = 1e-3f;
  float label_smoothing = 0.1f;
  float aux_loss_weight = 0.4f;
  DType compute = DType::f32;  // convolutions in bf16 when DType::bf16
  // bf16: every activation between two ops held in bf16 (graph/precision_pass.h), for a backend
  // whose kernels take them; the trainers set it with --precision=bfloat16 on such a CPU.
  // Training and evaluation graphs alike; inference programs set it in InferenceGraphOptions.
  DType activations = DType::f32;
};

// The names build_model() accepts, in a fixed order.
std::vector<std::string> model_names();

// The reference application's defaults for `name` (the flags' defaults): 299x299, 1001
// classes, BN decay 0.996 for inception_v3 and 0.995 for inception_v4; 224x224, 1000
// classes, BN decay 0.9 / epsilon 1e-5, no label smoothing for resnet50 (torchvision and
// the TF official ResNet); the model zoo's as docs/models.md lists them (each model file's
// ModelSpec). Fails for an unknown name, listing the known ones.
Result<ModelOptions> default_model_options(const std::string& name);

// The smallest (and, for inception_v3 and mobilenet_v1, the largest) image side the network
// accepts with these options; build_model() rejects other sizes with this range in the message.
struct ImageSideRange {
  int min = 1, max = 1 << 30;
};
Result<ImageSideRange> supported_image_sides(const ModelOptions& options);

// Builds the network: images input [batch,H,W,3]; unless build_losses is false, labels [batch]
// and the loss terms: main softmax cross-entropy (weight 1) and, with AuxLogits, the aux one
// (weight aux_loss_weight), both with label_smoothing. Eval graphs (training = false) keep the
// loss terms so evaluation can report the reference's loss. graph.logits = the main logits.
// Fails (saying which value and the allowed range) for an unknown name, an image too small
// or too large, depth_multiplier <= 0, or another out-of-range option.
Result<Graph> build_model(const ModelOptions& options);

}  // namespace ic
