#include "serve/api.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "data/image_codec.h"
#include "data/preprocessing.h"
#include "infer/top_classes.h"
#include "serve/base64.h"

namespace ic {
namespace {

using nlohmann::json;

// A request the server cannot answer as sent (400).
template <typename... Parts>
Status bad_request(const Parts&... parts) {
  return invalid_argument(parts...);
}

struct at_index {
  size_t index;
  friend std::ostream& operator<<(std::ostream& out, at_index at) {
    return out << "instance " << at.index;
  }
};

const char* type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    default: return "a number";
  }
}

// The outer dimensions of a nested array, following first elements ("[299][299][3]").
std::string nested_shape(const json& value) {
  std::ostringstream shape;
  const json* at = &value;
  bool any = false;
  while (at->is_array()) {
    shape << '[' << at->size() << ']';
    any = true;
    if (at->empty()) break;
    at = &at->front();
  }
  return any ? shape.str() : std::string("a scalar");
}

// An instance object's image value: {"b64": ...} itself, or the value under a named input.
const json* named_image(const json& instance) {
  if (!instance.is_object()) return &instance;
  if (instance.contains("b64")) return &instance;
  for (const char* key : {"images", "image", "image/encoded"}) {
    auto found = instance.find(key);
    if (found != instance.end()) return &*found;
  }
  return nullptr;
}

Status fill_encoded(const json& b64, size_t index, const InstanceOptions& options, float* out) {
  if (!b64.is_string()) {
    return bad_request(at_index{index}, ": \"b64\" must be a string of base64, not ",
                       type_name(b64));
  }
  Result<std::string> bytes = base64_decode(b64.get_ref<const std::string&>());
  if (!bytes.ok()) return bad_request(at_index{index}, ": ", bytes.status().message());
  return fill_encoded_image(*bytes, index, options, out);
}

Status fill_floats(const json& value, size_t index, const InstanceOptions& options, float* out) {
  const size_t height = static_cast<size_t>(options.height);
  const size_t width = static_cast<size_t>(options.width);
  auto wrong_shape = [&] {
    return bad_request(at_index{index}, ": a float instance must have shape [", height, "][", width,
                       "][3] (this model's preprocessed image), got ", nested_shape(value));
  };
  if (value.size() != height) return wrong_shape();
  for (size_t y = 0; y < height; ++y) {
    const json& row = value[y];
    if (!row.is_array() || row.size() != width) return wrong_shape();
    for (size_t x = 0; x < width; ++x) {
      const json& pixel = row[x];
      if (!pixel.is_array() || pixel.size() != 3) return wrong_shape();
      for (size_t c = 0; c < 3; ++c) {
        const json& v = pixel[c];
        if (!v.is_number()) {
          return bad_request(at_index{index}, ": wrong dtype: ", type_name(v), " at [", y, "][", x,
                             "][", c, "], the input is DT_FLOAT");
        }
        const double d = v.get<double>();
        if (!std::isfinite(d) || std::fabs(d) > 3.0e38) {
          return bad_request(at_index{index}, ": value at [", y, "][", x, "][", c,
                             "] is not a finite float32");
        }
        // Pixels in 0..255 or 0..1 would not fail anywhere else: they would only predict wrong.
        if (std::fabs(d) > 1.0 + 1e-6) {
          return bad_request(at_index{index}, ": value ", d, " at [", y, "][", x, "][", c,
                             "] is outside [-1, 1], the preprocessed range (send an encoded "
                             "image as {\"b64\": ...} to have it preprocessed here)");
        }
        *out++ = static_cast<float>(d);
      }
    }
  }
  return Status();
}

}  // namespace

Status parse_predict_body(std::string_view text, bool classify, PredictRequest* out) {
  try {
    out->body = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond double ("1e500").
    return bad_request("the body is not valid JSON: ", e.what());
  }
  const json& body = out->body;
  if (!body.is_object()) {
    return bad_request("the body must be a JSON object with \"instances\" or \"inputs\"");
  }
  // TF Serving answers a signature the model does not have with 400; so do we (the names are
  // those GetModelMetadata lists over gRPC).
  if (auto signature = body.find("signature_name"); signature != body.end()) {
    const std::string name = signature->is_string() ? signature->get<std::string>() : "";
    if (!signature->is_string() ||
        (!name.empty() && name != "serving_default" && name != "classify")) {
      return bad_request("unknown signature_name ", signature->dump(),
                         " (this model has \"serving_default\" and \"classify\")");
    }
  }
  const json* list = nullptr;
  for (const char* key : {"instances", "examples"}) {
    if (!classify && std::string_view(key) == "examples") continue;
    auto found = body.find(key);
    if (found != body.end()) list = &*found;
  }
  if (auto inputs = body.find("inputs"); inputs != body.end()) {
    if (list != nullptr) return bad_request("give either \"instances\" or \"inputs\", not both");
    out->columnar = true;
    list = &*inputs;
    if (list->is_object() && !list->contains("b64")) {
      const json* named = named_image(*list);
      if (named == nullptr) {
        return bad_request("\"inputs\" names no input this model has (its input is \"images\")");
      }
      list = named;
    }
  }
  if (list == nullptr) {
    return bad_request(classify ? "the body has no \"instances\", \"examples\" or \"inputs\""
                                : "the body has no \"instances\" or \"inputs\"");
  }
  if (!list->is_array()) {
    return bad_request("the instances must be a JSON array (a batch), not ", type_name(*list));
  }
  if (list->empty()) return bad_request("no instances: the batch is empty");
  for (const json& instance : *list) out->instances.push_back(&instance);
  if (auto top_k = body.find("top_k"); classify && top_k != body.end()) {
    if (!top_k->is_number_integer() || top_k->get<int64_t>() < 1 ||
        top_k->get<int64_t>() > 1000000) {
      return bad_request("\"top_k\" must be a positive integer");
    }
    out->top_k = static_cast<int>(top_k->get<int64_t>());
  }
  return Status();
}

Status fill_encoded_image(std::string_view bytes, size_t index, const InstanceOptions& options,
                          float* out) {
  Result<ImageDimensions> size = read_image_dimensions(bytes);
  if (!size.ok()) {
    return bad_request(at_index{index}, ": not a JPEG or PNG image we can read (",
                       size.status().message(), ")");
  }
  if (options.max_image_pixels > 0 && size->pixels() > options.max_image_pixels) {
    return resource_exhausted(at_index{index}, ": the image claims ", size->width, "x",
                              size->height, " pixels, more than the server's limit of ",
                              options.max_image_pixels, " (--max_image_pixels)");
  }
  PreprocessOptions preprocess;
  preprocess.kind = options.preprocessing;
  preprocess.training = false;
  preprocess.height = options.height;
  preprocess.width = options.width;
  preprocess.max_pixels = options.max_image_pixels;
  Rng rng(0);  // evaluation preprocessing draws nothing
  thread_local PreprocessScratch scratch;
  const Status status = preprocess_image(bytes, {}, preprocess, rng, &scratch, out);
  if (!status.ok()) {
    // An image over the pixel limit stays one (413); any other failure is the image's (400).
    const StatusCode code = status.code() == StatusCode::resource_exhausted
                                ? StatusCode::resource_exhausted
                                : StatusCode::invalid_argument;
    return error(code, at_index{index}, ": ", status.message());
  }
  return Status();
}

Status fill_instance(const json& instance, size_t index, const InstanceOptions& options,
                     float* out) {
  const json* image = named_image(instance);
  if (image == nullptr) {
    return bad_request(at_index{index},
                       ": an object instance needs \"b64\" or the input name \"images\"");
  }
  if (image->is_object()) {
    auto b64 = image->find("b64");
    if (b64 == image->end()) {
      return bad_request(at_index{index}, ": an image object needs \"b64\"");
    }
    return fill_encoded(*b64, index, options, out);
  }
  if (image->is_array()) return fill_floats(*image, index, options, out);
  return bad_request(at_index{index}, ": wrong dtype: ", type_name(*image),
                     "; an instance is {\"b64\": ...} or a float array [", options.height, "][",
                     options.width, "][3]");
}

std::vector<float> softmax(const float* logits, int64_t classes) {
  const float max = *std::max_element(logits, logits + classes);
  std::vector<double> e(static_cast<size_t>(classes));
  double sum = 0;
  for (int64_t c = 0; c < classes; ++c) sum += e[c] = std::exp(double{logits[c]} - max);
  std::vector<float> p(static_cast<size_t>(classes));
  for (int64_t c = 0; c < classes; ++c) p[c] = static_cast<float>(e[c] / sum);
  return p;
}

namespace {

int64_t argmax(const float* row, int64_t classes) {
  return std::max_element(row, row + classes) - row;
}

}  // namespace

json predict_response(const float* logits, int64_t count, int64_t classes, bool columnar) {
  if (columnar) {
    json classes_out = json::array(), probabilities = json::array();
    for (int64_t i = 0; i < count; ++i) {
      const float* row = logits + i * classes;
      classes_out.push_back(argmax(row, classes));
      probabilities.push_back(softmax(row, classes));
    }
    return {{"outputs", {{"classes", classes_out}, {"probabilities", probabilities}}}};
  }
  json predictions = json::array();
  for (int64_t i = 0; i < count; ++i) {
    const float* row = logits + i * classes;
    predictions.push_back(
        {{"classes", argmax(row, classes)}, {"probabilities", softmax(row, classes)}});
  }
  return {{"predictions", predictions}};
}

json classify_response(const float* logits, int64_t count, int64_t classes, int top_k,
                       const std::map<int64_t, std::string>& label_names) {
  json result = json::array();
  for (int64_t i = 0; i < count; ++i) {
    json top = json::array();
    for (const auto& [label, probability] : top_classes(logits + i * classes, classes, top_k)) {
      auto name = label_names.find(label);
      top.push_back(
          {name != label_names.end() ? name->second : std::to_string(label), probability});
    }
    result.push_back(std::move(top));
  }
  return {{"result", result}};
}

std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ic
