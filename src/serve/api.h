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
// Every error carries the HTTP status it should be answered with.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ic {

// 200 = success; anything else is an error answered as {"error": message}.
struct HttpStatus {
  int code = 200;
  std::string message;
  bool ok() const { return code == 200; }
};

struct PredictRequest {
  nlohmann::json body;
  bool columnar = false;
  std::vector<const nlohmann::json*> instances;  // into body
  int top_k = 5;
};

// Parses a predict or classify body (classify = true also accepts "examples" and "top_k").
HttpStatus parse_predict_body(std::string_view text, bool classify, PredictRequest* out);

struct InstanceOptions {
  int height = 299, width = 299;
  int64_t max_image_pixels = 0;  // a b64 image claiming more is refused (413) before decoding
};

// Writes instance `index` preprocessed [height, width, 3] to `out`: a b64 JPEG/PNG goes through
// the evaluation preprocessing (data/preprocessing.h); a float array is copied after its shape
// and types are checked. Runs on the calling (HTTP) thread.
HttpStatus fill_instance(const nlohmann::json& instance, size_t index,
                         const InstanceOptions& options, float* out);

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
