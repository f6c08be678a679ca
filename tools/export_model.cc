// export_model: a trained checkpoint as a TensorFlow SavedModel (TF Serving,
// tf.saved_model.load), a safetensors file of the inference weights, or ONNX.
//   export_model --model_dir=DIR --export_dir=OUT [--checkpoint=PATH] [--format=saved_model]
// Each export goes into a new numbered directory OUT/<unix seconds>/ (infer/model_export.h).
#include <gflags/gflags.h>

#include <iostream>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "infer/model_export.h"
#include "infer/trained_model.h"
#include "train/flag_parser.h"

DEFINE_string(model_dir, "", "Directory whose latest checkpoint is exported");
DEFINE_string(checkpoint, "",
              "A checkpoint (model.ckpt-N, model.ckpt-N.index or model.ckpt-N.safetensors) "
              "instead of the newest one of --model_dir");
DEFINE_string(export_dir, "",
              "Base directory of the exports: each goes into a new subdirectory named by the "
              "time in seconds, OUT/<timestamp>/, as TensorFlow Serving's model_base_path expects");
DEFINE_string(format, "saved_model",
              "saved_model (saved_model.pb + variables/), safetensors (model.safetensors: the "
              "inference weights and metadata) or onnx (model.onnx)");

namespace {

int export_main(int argc, char** argv) {
  using namespace ic;
  static const std::vector<std::string> kFlagFiles = {"export_model.cc"};
  const ProgramHelp help{"export_model",
                         "exports a trained checkpoint for serving (SavedModel, safetensors, ONNX)",
                         "export_model --model_dir=MODEL_DIR --export_dir=EXPORT_DIR", ""};
  if (std::optional<int> exit_code = start_tool(help, kFlagFiles, argc, argv)) return *exit_code;
  Result<ExportFormat> format = parse_export_format(FLAGS_format);
  if (!format.ok()) {
    std::cerr << "export_model: bad value for --format: " << format.status().message() << std::endl;
    return exit_code_for(format.status());
  }
  if (FLAGS_export_dir.empty()) {
    std::cerr << "export_model: give --export_dir (--help lists the flags)" << std::endl;
    return 2;
  }
  Result<TrainedModel> model = load_trained_model(FLAGS_model_dir, FLAGS_checkpoint);
  if (!model.ok()) {
    std::cerr << "export_model: " << model.status().message() << std::endl;
    return exit_code_for(model.status());
  }
  Result<std::string> written = export_trained_model(*model, FLAGS_export_dir, *format);
  if (!written.ok()) {
    std::cerr << "export_model: " << written.status().message() << std::endl;
    return exit_code_for(written.status());
  }
  std::cout << "Exported " << model->checkpoint << " (global step " << model->global_step << ", "
            << describe(model->meta) << ") as " << FLAGS_format << " to " << *written << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ic::run_guarded("export_model", [&] { return export_main(argc, argv); });
}
