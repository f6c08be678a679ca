// serve's request bodies (serve/api.h): TF Serving's predict and classify JSON, then every
// instance filled as the server would (b64 images through the evaluation preprocessing, float
// arrays checked for shape and type) into an 8x8 input. A body that parses has at least one
// instance; a filled instance holds only finite values in [-1, 1]: anything else would reach
// the model as a silently wrong prediction. Every error is one a 4xx answers.
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "serve/api.h"
#include "serve/http_status.h"

namespace {

// A body's fault, never the server's: answered with a 4xx (serve/http_status.h).
bool is_client_error(const ic::Status& status) {
  const int http = ic::http_status_for(status.code());
  return http >= 400 && http <= 499;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const bool classify : {false, true}) {
    ic::PredictRequest request;
    const ic::Status status = ic::parse_predict_body(text, classify, &request);
    if (!status.ok()) {
      if (!is_client_error(status) || status.message().empty()) std::abort();
      continue;
    }
    if (request.instances.empty() || request.top_k < 1) std::abort();
    ic::InstanceOptions options;
    options.height = 8;
    options.width = 8;
    options.max_image_pixels = 1 << 16;
    std::vector<float> image(8 * 8 * 3);
    for (size_t i = 0; i < request.instances.size() && i < 4; ++i) {
      const ic::Status filled = ic::fill_instance(*request.instances[i], i, options, image.data());
      if (!filled.ok()) {
        if (!is_client_error(filled)) std::abort();
        continue;
      }
      for (const float v : image) {
        if (!std::isfinite(v) || v < -1.f || v > 1.f) std::abort();
      }
    }
  }
  return 0;
}
