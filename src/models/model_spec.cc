#include "models/model_spec.h"

namespace ic {

// One line per model: its file defines the function.
const ModelSpec& inception_v3_spec();
const ModelSpec& inception_v4_spec();
const ModelSpec& resnet50_spec();
const ModelSpec& mobilenet_v1_spec();
const ModelSpec& mobilenet_v2_spec();
const ModelSpec& densenet121_spec();
const ModelSpec& squeezenet1_0_spec();
const ModelSpec& squeezenet1_1_spec();
const ModelSpec& efficientnet_b0_spec();

const std::vector<const ModelSpec*>& model_registry() {
  static const std::vector<const ModelSpec*> all = {
      &inception_v3_spec(),  &inception_v4_spec(),  &resnet50_spec(),
      &mobilenet_v1_spec(),  &mobilenet_v2_spec(),  &densenet121_spec(),
      &squeezenet1_0_spec(), &squeezenet1_1_spec(), &efficientnet_b0_spec(),
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
