// export_model: a trained checkpoint as a TensorFlow SavedModel (TF Serving,
// tf.saved_model.load), a safetensors file of the inference weights, or ONNX.
//   export_model --model_dir=DIR --export_dir=OUT [--checkpoint=PATH] [--format=saved_model]
// Each export goes into a new numbered directory OUT/<unix seconds>/ (infer/model_export.h).
#include <array>
#include <iostream>
#include <string>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "infer/model_export.h"
#include "runtime/inference_model.h"

namespace ic {
// --format's names, in the order its help and its error list them.
template <>
struct Choices<ExportFormat> {
  static constexpr std::array<ChoiceName<ExportFormat>, 3> names = {
      {{ExportFormat::saved_model, "saved_model"},
       {ExportFormat::onnx, "onnx"},
       {ExportFormat::safetensors, "safetensors"}}};
};
}  // namespace ic

namespace {

struct ExportFlags {
  std::string model_dir, checkpoint, export_dir;
  ic::ExportFormat format = ic::ExportFormat::saved_model;
};

const ic::FlagTable<ExportFlags>& export_flags() {
  using namespace ic::flag_entries;
  using O = ExportFlags;
  static const ic::FlagTable<O> table({
      text("model_dir", &O::model_dir, "Directory whose latest checkpoint is exported"),
      text("checkpoint", &O::checkpoint,
           "A checkpoint (model.ckpt-N, model.ckpt-N.index or model.ckpt-N.safetensors) "
           "instead of the newest one of --model_dir"),
      text("export_dir", &O::export_dir,
           "Base directory of the exports: each goes into a new subdirectory named by the "
           "time in seconds, OUT/<timestamp>/, as TensorFlow Serving's model_base_path expects"),
      choice("format", &O::format,
             "saved_model (saved_model.pb + variables/), safetensors (model.safetensors: the "
             "inference weights and metadata) or onnx (model.onnx)"),
  });
  return table;
}

int export_main(int argc, char** argv) {
  using namespace ic;
  ExportFlags flags;
  const ProgramHelp help{
      .name = "export_model",
      .about = "exports a trained checkpoint for serving (SavedModel, safetensors, ONNX)",
      .example = "export_model --model_dir=MODEL_DIR --export_dir=EXPORT_DIR"};
  if (std::optional<int> exit_code = start_tool(help, export_flags(), argc, argv, &flags))
    return *exit_code;
  if (flags.export_dir.empty()) {
    std::cerr << "export_model: give --export_dir (--help lists the flags)" << std::endl;
    return 2;
  }
  Result<InferenceModel> model = load_for_inference(flags.model_dir, flags.checkpoint);
  if (!model.ok()) {
    std::cerr << "export_model: " << model.status().message() << std::endl;
    return exit_code_for(model.status());
  }
  Result<std::string> written = export_trained_model(*model, flags.export_dir, flags.format);
  if (!written.ok()) {
    std::cerr << "export_model: " << written.status().message() << std::endl;
    return exit_code_for(written.status());
  }
  std::cout << "Exported " << model->checkpoint << " (global step " << model->global_step << ", "
            << describe(model->meta) << ") as " << choice_name(flags.format) << " to " << *written
            << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ic::run_guarded("export_model", [&] { return export_main(argc, argv); });
}
