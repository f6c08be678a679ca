// ONNX export of a trained model's inference network (main head only), for ONNX Runtime and
// other standard runtimes. docs/formats.md "ONNX export" describes the file:
//   input  images         float32 [N,H,W,3] NHWC in [-1,1] (the evaluation preprocessing's
//                         output), transposed to NCHW by the graph's first node
//   output logits         float32 [N,classes]
//          probabilities  float32 [N,classes] (Softmax)
//          classes        int64   [N]         (ArgMax)
// Standard ai.onnx ops only (opset 13), batch norm folded into the convolutions, the batch
// dimension dynamic ("N"), weights as little-endian raw_data initializers. The model passes
// libonnx's checker before it is written.
// An int8 model (model.int8 set) is written in QDQ form: each layer its table names reads
// Clip -> QuantizeLinear -> DequantizeLinear of its input and DequantizeLinear of int8 weights
// (infer/onnx_qdq.h; docs/formats.md "ONNX export of an int8 model").
#pragma once

#include <string>
#include <vector>

#include "backend/ops.h"
#include "core/status.h"
#include "runtime/inference_model.h"

namespace ic {

inline constexpr int kOnnxOpset = 13;

// Writes `model` as an ONNX file at `path` (atomically: a temp file renamed into place).
// Errors name the path, or the graph node that has no ONNX equivalent.
Status export_onnx(const InferenceModel& model, const std::string& path);

// A convolution with the inference batch norm after it folded in, in ONNX's layout:
//   w'[o,i,kh,kw] = w[kh,kw,i,o] * s[o],   b'[o] = (b[o] - mean[o]) * s[o] + beta[o],
//   s[o] = gamma[o] / sqrt(var[o] + eps)   (gamma = 1 when the model has none, b = 0 when
// the conv has no bias). Computed in double, rounded once to float.
struct FoldedConv {
  std::vector<float> weights;  // [Co,Ci,kh,kw]
  std::vector<float> bias;     // [Co]
};

struct BatchNormValues {
  const float* beta = nullptr;
  const float* gamma = nullptr;  // null: gamma = 1
  const float* mean = nullptr;
  const float* variance = nullptr;
  float epsilon = 1e-3f;
};

// `conv_bias` may be null; `bn` null leaves the weights unscaled (a conv without batch norm).
FoldedConv fold_conv(const Conv2dDesc& conv, const float* hwio_weights, const float* conv_bias,
                     const BatchNormValues* bn);

}  // namespace ic
