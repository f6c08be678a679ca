// serve's gRPC Predict requests (serve/grpc_tensors.h): PredictRequest bytes parsed as the
// gRPC server does, the signature and outputs chosen, the input tensor checked and every
// instance filled into an 8x8 input (float tensors from tensor_content or float_val, string
// tensors decoded and preprocessed). A filled instance holds only finite values in [-1, 1]
// (with serve's float32 rounding allowance at both ends);
// every error is one a client caused (INVALID_ARGUMENT or RESOURCE_EXHAUSTED), with a message.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "quiet_protobuf.h"
#include "serve/grpc_tensors.h"

namespace {

bool is_client_error(const ic::Status& status) {
  return !status.message().empty() && (status.code() == ic::StatusCode::invalid_argument ||
                                       status.code() == ic::StatusCode::resource_exhausted);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensorflow::serving::PredictRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (ic::Result<std::vector<std::string>> outputs = ic::requested_outputs(request);
      !outputs.ok() && !is_client_error(outputs.status())) {
    std::abort();
  }
  ic::InstanceOptions options;
  options.height = 8;
  options.width = 8;
  options.max_image_pixels = 1 << 16;
  // Both signatures, whatever the request names, so each input kind is reached.
  for (const ic::PredictSignature signature :
       {ic::PredictSignature::serving_default, ic::PredictSignature::classify}) {
    ic::Result<ic::TensorImages> images = ic::request_images(request, signature, options);
    if (!images.ok()) {
      if (!is_client_error(images.status())) std::abort();
      continue;
    }
    if (images->count < 1) std::abort();
    std::vector<float> image(8 * 8 * 3);
    for (int64_t i = 0; i < images->count && i < 4; ++i) {
      const ic::Status filled = ic::fill_tensor_image(*images, i, options, image.data());
      if (!filled.ok()) {
        if (!is_client_error(filled)) std::abort();
        continue;
      }
      for (const float v : image) {
        if (!std::isfinite(v) || std::fabs(v) > 1.f + 1e-6f) std::abort();
      }
    }
  }
  ic::Result<std::vector<std::string_view>> examples =
      ic::example_images(tensorflow::serving::Input());
  if (examples.ok()) std::abort();  // no examples is an error
  return 0;
}
