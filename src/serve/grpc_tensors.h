// TensorFlow Serving's gRPC Predict tensors to preprocessed instances, and logits back to
// output tensors. The two signatures serve answers:
//   serving_default  input "images": DT_FLOAT [N, H, W, 3], already preprocessed (values in
//                    [-1, 1]), in tensor_content (little-endian float32) or float_val
//   classify         input "image_bytes": DT_STRING [N] of JPEG or PNG bytes, decoded and
//                    preprocessed here exactly as REST's {"b64": ...} images are
// and both answer "classes" DT_INT64 [N] (the argmax) and "probabilities" DT_FLOAT [N, C] (the
// softmax REST answers, serve/api.h). Errors are invalid_argument (a bad tensor, shape, dtype,
// signature, non-finite value) or resource_exhausted (an image over the pixel limit).
// Nothing here needs the server: fuzz/fuzz_grpc_predict.cc runs it on outside bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "proto/tensorflow_serving/input.pb.h"
#include "proto/tensorflow_serving/predict.pb.h"
#include "serve/api.h"

namespace ic {

enum class PredictSignature { serving_default, classify };

// "" and "serving_default": serving_default; "classify"; anything else is invalid_argument.
Result<PredictSignature> predict_signature(std::string_view name);
// The name of the one input `signature` takes ("images" or "image_bytes").
const char* signature_input(PredictSignature signature);

// The checked input tensor of a Predict request: its instance count, and whether they are
// encoded images (DT_STRING) or preprocessed floats.
struct TensorImages {
  const tensorflow::TensorProto* tensor = nullptr;
  int64_t count = 0;
  bool encoded = false;
};

// Finds and checks the input of `signature` in `request` (its name, dtype, shape and value
// count against `options`' image size); the values themselves are checked as they are filled.
Result<TensorImages> request_images(const tensorflow::serving::PredictRequest& request,
                                    PredictSignature signature, const InstanceOptions& options);

// Writes instance `index` of `images` preprocessed [height, width, 3] to `out`.
Status fill_tensor_image(const TensorImages& images, int64_t index, const InstanceOptions& options,
                         float* out);

// The encoded images of a Classify request: each tf.Example's "image/encoded" bytes (a
// context example's when the example has none), in order. Views into `input`.
Result<std::vector<std::string_view>> example_images(const tensorflow::serving::Input& input);

// The outputs a request asks for (output_filter; empty: both), in the order given.
Result<std::vector<std::string>> requested_outputs(
    const tensorflow::serving::PredictRequest& request);

// Writes `outputs` for `count` rows of logits [count, classes] into `response`.
void write_predict_outputs(const float* logits, int64_t count, int64_t classes,
                           const std::vector<std::string>& outputs,
                           tensorflow::serving::PredictResponse* response);

}  // namespace ic
