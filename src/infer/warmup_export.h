// The warm-up requests an export carries for TensorFlow Serving (and for serve, which replays
// them the same way: serve/warmup.h): <version>/assets.extra/tf_serving_warmup_requests, a
// TFRecord file of serialized tensorflow.serving.PredictionLog messages. Each image becomes one
// predict_log whose PredictRequest names the model and the `classify` signature and holds the
// image's bytes as its one `image_bytes` input, DT_STRING of shape [1].
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ic {

// Where an export version keeps them, relative to the version directory (TF Serving's name).
inline constexpr const char* kWarmupRequestsFile = "assets.extra/tf_serving_warmup_requests";
// TF Serving's limit on their number: a file with more records fails the version's load.
inline constexpr int64_t kMaxWarmupRecords = 1000;

// One serialized PredictionLog asking `model_name`'s classify signature about `image_bytes`.
std::string warmup_predict_log(const std::string& model_name, std::string_view image_bytes);

// Reads each image file of `image_paths` (through the file-system seam) and checks it decodes:
// an error names the file. More than kMaxWarmupRecords paths is invalid_argument. Returns the
// files' bytes in order.
Result<std::vector<std::string>> read_warmup_images(const std::vector<std::string>& image_paths);

// Writes `version_dir`/assets.extra/tf_serving_warmup_requests with one record per image.
Status write_warmup_requests(const std::string& version_dir, const std::string& model_name,
                             const std::vector<std::string>& images);

}  // namespace ic
