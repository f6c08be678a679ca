// TensorFlow Serving's REST bodies: requests to instances, logits to responses. Shapes as TF
// Serving documents them (https://www.tensorflow.org/tfx/serving/api_rest):
//   predict, row:      {"instances": [I, ...]}       -> {"predictions": [{"classes": k,
//                                                         "probabilities": [...]}, ...]}
//   predict, columnar: {"inputs": [I, ...]} or {"inputs": {"images": [I, ...]}}
//                                                     -> {"outputs": {"classes": [...],
//                                                         "probabilities": [[...], ...]}}
//   classify:          {"instances"|"examples": [I, ...], "top_k": 5}
//                                                     -> {"result": [[["label", score], ...]]}
// where an instance I is {"b64": "<JPEG or PNG>"}, a float array [H][W][3] already
// preprocessed, or either one named: {"images": I} (also "image" or "image/encoded").
// Errors are invalid_argument (a bad request: 400) or resource_exhausted (an image over the
// pixel limit: 413); serve/http_status.h maps them.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/image_codec.h"
#include "data/preprocessing.h"

namespace ic {

struct PredictRequest {
  nlohmann::json body;
  bool columnar = false;
  std::vector<const nlohmann::json*> instances;  // into body
  int top_k = 5;
};

// Parses a predict or classify body (classify = true also accepts "examples" and "top_k").
Status parse_predict_body(std::string_view text, bool classify, PredictRequest* out);

struct InstanceOptions {
  int height = 299, width = 299;
  // A b64 image claiming more is refused (resource_exhausted) before decoding; the decoders'
  // own default, so that no caller is left without a limit.
  int64_t max_image_pixels = kDefaultMaxImagePixels;
  // The model's evaluation preprocessing for encoded images (its checkpoint's metadata).
  PreprocessOptions::Kind preprocessing = PreprocessOptions::Kind::inception;
};

// Writes instance `index` preprocessed [height, width, 3] to `out`: a b64 JPEG/PNG goes through
// the evaluation preprocessing (data/preprocessing.h); a float array is copied after its shape
// and types are checked. Runs on the calling (HTTP) thread.
Status fill_instance(const nlohmann::json& instance, size_t index, const InstanceOptions& options,
                     float* out);

// Writes the encoded (JPEG or PNG) image `bytes` of instance `index` preprocessed for
// evaluation, as a {"b64": ...} instance is: the header's size is checked against the pixel
// limit (resource_exhausted) before anything is decoded; bytes that are no image we read are
// invalid_argument. The gRPC front end's DT_STRING images go through here too.
Status fill_encoded_image(std::string_view bytes, size_t index, const InstanceOptions& options,
                          float* out);

// Softmax of one row of logits (in double, as classify does).
std::vector<float> softmax(const float* logits, int64_t classes);

// The predict response for `count` rows of logits [count, classes].
nlohmann::json predict_response(const float* logits, int64_t count, int64_t classes, bool columnar);
// The classify response: the top_k labels (names from `label_names` when present) per row.
nlohmann::json classify_response(const float* logits, int64_t count, int64_t classes, int top_k,
                                 const std::map<int64_t, std::string>& label_names);

// {"error": message}
std::string error_body(const std::string& message);

}  // namespace ic
