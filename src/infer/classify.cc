#include "infer/classify.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include "data/preprocessing.h"
#include "infer/npy.h"
#include "infer/onnx_import.h"
#include "infer/top_classes.h"
#include "io/file_system.h"
#include "runtime/inference_model.h"
#include "runtime/inference_runner.h"

namespace ic {
namespace {

bool has_suffix(const std::string& text, const std::string& suffix) {
  if (text.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), text.rbegin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
}

// An image, .npy batch or label file larger than this is a mistake (a wrong path), not input.
constexpr uint64_t kMaxInputBytes = uint64_t{4} << 30;

// Appends the preprocessed images of one input to `images` and their names to `names`.
// Images go through `meta`'s evaluation preprocessing; .npy arrays are taken as they are.
Status load_input(const std::string& path, const CheckpointMeta& meta, int64_t max_pixels,
                  std::vector<float>* images, std::vector<std::string>* names) {
  const int height = meta.height, width = meta.width;
  IC_ASSIGN_OR_RETURN(const bool is_dir, path_is_directory(path));
  if (is_dir) return error(path, ": is a directory, not an input file");
  const size_t image_floats = static_cast<size_t>(height) * width * 3;
  if (has_suffix(path, ".npy")) {
    IC_ASSIGN_OR_RETURN(NpyArray array, read_npy(path));
    const auto& s = array.shape;
    const bool single = s.size() == 3;
    if (!(single || s.size() == 4) || s[s.size() - 3] != height || s[s.size() - 2] != width ||
        s.back() != 3) {
      return error(path, ": .npy shape must be [", height, ",", width, ",3] or [N,", height, ",",
                   width, ",3] for this checkpoint");
    }
    IC_RETURN_IF_ERROR(check_all_finite(array, path));
    images->insert(images->end(), array.data.begin(), array.data.end());
    const int64_t count = single ? 1 : s[0];
    for (int64_t i = 0; i < count; ++i) {
      names->push_back(single ? path : path + "[" + std::to_string(i) + "]");
    }
    return Status();
  }
  Result<std::string> bytes = read_file_to_string(path, kMaxInputBytes);
  if (!bytes.ok()) return bytes.status().with_context("cannot read input");
  PreprocessOptions options;
  options.kind = meta.preprocessing;
  options.training = false;
  options.height = height;
  options.width = width;
  options.max_pixels = max_pixels;
  Rng rng(0);
  PreprocessScratch scratch;
  const size_t at = images->size();
  images->resize(at + image_floats);
  Status status = preprocess_image(*bytes, {}, options, rng, &scratch, images->data() + at);
  if (!status.ok()) return status.with_context(path);
  names->push_back(path);
  return Status();
}

}  // namespace

Result<std::map<int64_t, std::string>> read_label_names(const std::string& path) {
  Result<std::string> text = read_file_to_string(path, kMaxInputBytes);
  if (!text.ok()) return text.status().with_context("cannot read --labels_file");
  std::istringstream in(*text);
  std::map<int64_t, std::string> names;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t digits = 0;
    while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
    if (digits > 0 && digits < line.size() &&
        (line[digits] == ' ' || line[digits] == '\t' || line[digits] == ':')) {
      int64_t label = 0;
      const auto [end, ec] = std::from_chars(line.data(), line.data() + digits, label);
      if (ec != std::errc() || end != line.data() + digits) {
        return error(path, ":", line_number + 1, ": label ", line.substr(0, digits),
                     " is not a number this program can hold (at most ",
                     std::numeric_limits<int64_t>::max(), ")");
      }
      const size_t start = line.find_first_not_of(" \t:", digits);
      names[label] = start == std::string::npos ? "" : line.substr(start);
    } else {
      names[line_number] = line;
    }
    ++line_number;
  }
  return names;
}

Result<ClassifyResult> classify(const ClassifyOptions& options, Backend& backend) {
  ClassifyResult result;
  IC_ASSIGN_OR_RETURN(result.checkpoint, resolve_checkpoint(options.model_dir, options.checkpoint));
  if (options.inputs.empty()) return invalid_argument("no inputs (give image or .npy files)");
  if (options.top_k < 1)
    return invalid_argument("bad value ", options.top_k, " for top_k (allowed: 1 or more)");
  IC_ASSIGN_OR_RETURN(InferenceModel model, load_servable_model("", result.checkpoint));
  IC_ASSIGN_OR_RETURN(const InferenceGraphOptions graph_options,
                      graph_options_for(model, options.precision, backend));
  const CheckpointMeta& meta = model.meta;

  std::vector<float> images;
  std::vector<std::string> names;
  for (const std::string& input : options.inputs) {
    IC_RETURN_IF_ERROR(load_input(input, meta, options.max_image_pixels, &images, &names));
  }
  const int64_t count = static_cast<int64_t>(names.size());

  IC_ASSIGN_OR_RETURN(std::unique_ptr<InferenceRunner> runner,
                      InferenceRunner::create(backend, model, {count}, graph_options));
  result.global_step = model.global_step;
  result.graph_stats = runner->pass_stats();
  result.logits.resize(static_cast<size_t>(count * meta.num_classes));
  runner->run(count, images.data(), result.logits.data());
  const int64_t classes = meta.num_classes;
  result.logits_shape = {count, classes};

  for (int64_t i = 0; i < count; ++i) {
    result.predictions.push_back(
        {names[i], top_classes(result.logits.data() + i * classes, classes, options.top_k)});
  }
  return result;
}

}  // namespace ic
