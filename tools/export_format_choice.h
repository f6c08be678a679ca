// --format (export_model) and --export_format (sweep): ExportFormat's names, in the order their
// help and their errors list them.
#pragma once

#include <array>

#include "cli/choices.h"
#include "infer/model_export.h"

namespace ic {
template <>
struct Choices<ExportFormat> {
  static constexpr std::array<ChoiceName<ExportFormat>, 4> names = {
      {{ExportFormat::saved_model, "saved_model"},
       {ExportFormat::onnx, "onnx"},
       {ExportFormat::safetensors, "safetensors"},
       {ExportFormat::int8, "int8"}}};
};
}  // namespace ic
