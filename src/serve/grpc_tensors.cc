#include "serve/grpc_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace ic {
namespace {

using tensorflow::TensorProto;

constexpr const char* kClasses = "classes";
constexpr const char* kProbabilities = "probabilities";

std::string dtype_name(int dtype) {
  const std::string& name = tensorflow::DataType_Name(static_cast<tensorflow::DataType>(dtype));
  return name.empty() ? "dtype " + std::to_string(dtype) : name;
}

std::string shape_text(const tensorflow::TensorShapeProto& shape) {
  std::ostringstream text;
  text << '[';
  for (int i = 0; i < shape.dim_size(); ++i) text << (i ? ", " : "") << shape.dim(i).size();
  text << ']';
  return text.str();
}

Status check_float_shape(const TensorProto& tensor, const InstanceOptions& options,
                         int64_t* count) {
  const tensorflow::TensorShapeProto& shape = tensor.tensor_shape();
  const bool fits = shape.dim_size() == 4 && shape.dim(0).size() >= 1 &&
                    shape.dim(1).size() == options.height && shape.dim(2).size() == options.width &&
                    shape.dim(3).size() == 3;
  if (!fits) {
    return invalid_argument("input 'images' must have shape [N, ", options.height, ", ",
                            options.width,
                            ", 3] with N >= 1 (this model's preprocessed images), "
                            "got ",
                            shape_text(shape));
  }
  const int64_t per_image = int64_t{options.height} * options.width * 3;
  const int64_t content_floats = static_cast<int64_t>(tensor.tensor_content().size() / 4);
  const int64_t have = tensor.tensor_content().empty() ? tensor.float_val_size() : content_floats;
  // Compared by division: N comes from outside and N * per_image could overflow.
  if (!tensor.tensor_content().empty() && tensor.tensor_content().size() % 4 != 0) {
    return invalid_argument("input 'images': tensor_content has ", tensor.tensor_content().size(),
                            " bytes, not a whole number of float32 values");
  }
  if (have % per_image != 0 || have / per_image != shape.dim(0).size()) {
    return invalid_argument(
        "input 'images' of shape ", shape_text(shape), " needs ", shape.dim(0).size(), " x ",
        per_image, " float values, got ", have,
        tensor.tensor_content().empty() ? " in float_val" : " in tensor_content");
  }
  *count = shape.dim(0).size();
  return Status();
}

Status check_string_shape(const TensorProto& tensor, int64_t* count) {
  const tensorflow::TensorShapeProto& shape = tensor.tensor_shape();
  if (shape.dim_size() != 1 || shape.dim(0).size() < 1) {
    return invalid_argument("input 'image_bytes' must have shape [N] with N >= 1, got ",
                            shape_text(shape));
  }
  if (shape.dim(0).size() != tensor.string_val_size()) {
    return invalid_argument("input 'image_bytes' of shape ", shape_text(shape), " needs ",
                            shape.dim(0).size(), " string_val values, got ",
                            tensor.string_val_size());
  }
  *count = shape.dim(0).size();
  return Status();
}

}  // namespace

Result<PredictSignature> predict_signature(std::string_view name) {
  if (name.empty() || name == "serving_default") return PredictSignature::serving_default;
  if (name == "classify") return PredictSignature::classify;
  return invalid_argument("unknown signature_name '", name,
                          "' (this model has 'serving_default' and 'classify')");
}

const char* signature_input(PredictSignature signature) {
  return signature == PredictSignature::classify ? "image_bytes" : "images";
}

Result<TensorImages> request_images(const tensorflow::serving::PredictRequest& request,
                                    PredictSignature signature, const InstanceOptions& options) {
  const std::string input = signature_input(signature);
  for (const auto& [name, tensor] : request.inputs()) {
    if (name != input) {
      return invalid_argument("unknown input '", name, "': the signature's only input is '", input,
                              "'");
    }
  }
  auto found = request.inputs().find(input);
  if (found == request.inputs().end()) {
    return invalid_argument("the request has no input '", input, "'");
  }
  TensorImages images;
  images.tensor = &found->second;
  images.encoded = signature == PredictSignature::classify;
  const int want = images.encoded ? tensorflow::DT_STRING : tensorflow::DT_FLOAT;
  if (images.tensor->dtype() != want) {
    return invalid_argument("input '", input, "' must be ", dtype_name(want), ", got ",
                            dtype_name(images.tensor->dtype()));
  }
  IC_RETURN_IF_ERROR(images.encoded ? check_string_shape(*images.tensor, &images.count)
                                    : check_float_shape(*images.tensor, options, &images.count));
  return images;
}

Status fill_tensor_image(const TensorImages& images, int64_t index, const InstanceOptions& options,
                         float* out) {
  const TensorProto& tensor = *images.tensor;
  if (images.encoded) {
    return fill_encoded_image(tensor.string_val(static_cast<int>(index)),
                              static_cast<size_t>(index), options, out);
  }
  const int64_t per_image = int64_t{options.height} * options.width * 3;
  const int64_t first = index * per_image;
  if (!tensor.tensor_content().empty()) {
    std::memcpy(out, tensor.tensor_content().data() + first * 4,
                static_cast<size_t>(per_image) * 4);
  } else {
    std::copy_n(tensor.float_val().data() + first, per_image, out);
  }
  for (int64_t i = 0; i < per_image; ++i) {
    if (std::isfinite(out[i]) && std::fabs(out[i]) <= 1.0f + 1e-6f) continue;
    const int64_t c = i % 3, x = i / 3 % options.width, y = i / 3 / options.width;
    std::ostringstream where;
    where << '[' << index << "][" << y << "][" << x << "][" << c << ']';
    const std::string at = where.str();
    if (!std::isfinite(out[i])) {
      return invalid_argument("input 'images': the value at ", at, " is ",
                              std::isnan(out[i]) ? "NaN" : "infinite", ", not a finite float32");
    }
    // Pixels in 0..255 or 0..1 would not fail anywhere else: they would only predict wrong.
    return invalid_argument("input 'images': the value ", out[i], " at ", at,
                            " is outside [-1, 1], the preprocessed range (send encoded images "
                            "to the 'classify' signature to have them preprocessed here)");
  }
  return Status();
}

namespace {

// The "image/encoded" bytes of `example`, or null.
const std::string* encoded_image(const tensorflow::Example& example) {
  const auto& features = example.features().feature();
  auto found = features.find("image/encoded");
  if (found == features.end() || !found->second.has_bytes_list() ||
      found->second.bytes_list().value_size() != 1) {
    return nullptr;
  }
  return &found->second.bytes_list().value(0);
}

}  // namespace

Result<std::vector<std::string_view>> example_images(const tensorflow::serving::Input& input) {
  const bool with_context = input.has_example_list_with_context();
  const auto& examples =
      with_context ? input.example_list_with_context().examples() : input.example_list().examples();
  if (examples.empty()) return invalid_argument("the request has no examples");
  const std::string* context =
      with_context ? encoded_image(input.example_list_with_context().context()) : nullptr;
  std::vector<std::string_view> images;
  for (int i = 0; i < examples.size(); ++i) {
    const std::string* image = encoded_image(examples[i]);
    if (image == nullptr) image = context;
    if (image == nullptr) {
      return invalid_argument("example ", i,
                              " has no 'image/encoded' feature holding one bytes value");
    }
    images.push_back(*image);
  }
  return images;
}

Result<std::vector<std::string>> requested_outputs(
    const tensorflow::serving::PredictRequest& request) {
  if (request.output_filter().empty()) return std::vector<std::string>{kClasses, kProbabilities};
  std::vector<std::string> outputs;
  for (const std::string& name : request.output_filter()) {
    if (name != kClasses && name != kProbabilities) {
      return invalid_argument("unknown output '", name, "' in output_filter (the outputs are '",
                              kClasses, "' and '", kProbabilities, "')");
    }
    if (std::find(outputs.begin(), outputs.end(), name) != outputs.end()) {
      return invalid_argument("output '", name, "' is named twice in output_filter");
    }
    outputs.push_back(name);
  }
  return outputs;
}

void write_predict_outputs(const float* logits, int64_t count, int64_t classes,
                           const std::vector<std::string>& outputs,
                           tensorflow::serving::PredictResponse* response) {
  for (const std::string& name : outputs) {
    TensorProto& tensor = (*response->mutable_outputs())[name];
    tensorflow::TensorShapeProto& shape = *tensor.mutable_tensor_shape();
    shape.add_dim()->set_size(count);
    if (name == kClasses) {
      tensor.set_dtype(tensorflow::DT_INT64);
      for (int64_t i = 0; i < count; ++i) {
        const float* row = logits + i * classes;
        tensor.add_int64_val(std::max_element(row, row + classes) - row);
      }
    } else {
      tensor.set_dtype(tensorflow::DT_FLOAT);
      shape.add_dim()->set_size(classes);
      for (int64_t i = 0; i < count; ++i) {
        // The same softmax as REST's answer, so both give the same bits.
        for (float p : softmax(logits + i * classes, classes)) tensor.add_float_val(p);
      }
    }
  }
}

}  // namespace ic
