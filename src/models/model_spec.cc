#include "models/model_spec.h"

namespace ic {

// One line per model: its file defines the function.
const ModelSpec& inception_v3_spec();
const ModelSpec& inception_v4_spec();
const ModelSpec& resnet50_spec();

const std::vector<const ModelSpec*>& model_registry() {
  static const std::vector<const ModelSpec*> all = {
      &inception_v3_spec(),
      &inception_v4_spec(),
      &resnet50_spec(),
  };
  return all;
}

Result<const ModelSpec*> find_model_spec(const std::string& name) {
  std::string known;
  for (const ModelSpec* spec : model_registry()) {
    if (spec->name == name) return spec;
    known += (known.empty() ? "" : ", ") + std::string(spec->name);
  }
  return error("unknown model '", name, "' (known: ", known, ")");
}

}  // namespace ic
