// export_model: a trained checkpoint as a TensorFlow SavedModel (TF Serving,
// tf.saved_model.load), a safetensors file of the inference weights, ONNX, or an int8 model
// quantized after training (calibrated on TFRecord images: infer/calibration.h).
//   export_model --model_dir=DIR --export_dir=OUT [--checkpoint=PATH] [--format=saved_model]
//   export_model --model_dir=DIR --export_dir=OUT --format=int8 [--calibration_data=DATA_DIR]
//   export_model ... --warmup_images=a.jpg,b.png   (TF Serving's warm-up requests, one per image)
// Each export goes into a new numbered directory OUT/<unix seconds>/ (infer/model_export.h).
#include <iostream>
#include <string>
#include <vector>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "export_format_choice.h"
#include "infer/calibration.h"
#include "infer/model_export.h"
#include "infer/warmup_export.h"
#include "runtime/inference_model.h"

namespace {

struct ExportFlags {
  std::string model_dir, checkpoint, export_dir;
  ic::ExportFormat format = ic::ExportFormat::saved_model;
  std::string calibration_data;
  std::string warmup_images;
  int64_t calibration_images = 512;
  int32_t num_threads = 0;
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
             "inference weights and metadata), onnx (model.onnx) or int8 (model.safetensors "
             "with int8 weights and calibrated scales, and model.onnx in QDQ form)"),
      text("calibration_data", &O::calibration_data,
           "int8: the TFRecord directory whose train-* images calibrate the activation scales "
           "(default: the --data_dir the checkpoint was trained on)"),
      number("calibration_images", &O::calibration_images, ic::flag_entries::at_least(1),
             "int8: how many images (the first of the sorted train-* files) calibrate"),
      text("warmup_images", &O::warmup_images,
           "Comma-separated JPEG or PNG files: the export also holds "
           "assets.extra/tf_serving_warmup_requests, one classify Predict request per image, "
           "which TensorFlow Serving and serve replay before the version serves"),
      number("num_threads", &O::num_threads, ic::flag_entries::at_least(0),
             "int8: CPU threads of the calibration run; 0 = all cores"),
  });
  return table;
}

// The files of --warmup_images, in order; an empty name (",," or a trailing comma) is an error.
ic::Result<std::vector<std::string>> warmup_image_paths(const std::string& list) {
  std::vector<std::string> paths;
  if (list.empty()) return paths;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string path = list.substr(start, comma == std::string::npos ? comma : comma - start);
    if (path.empty()) return ic::invalid_argument("--warmup_images has an empty file name: ", list);
    paths.push_back(path);
    if (comma == std::string::npos) return paths;
    start = comma + 1;
  }
}

// Sets model.int8 from a calibration run on the CPU, and says what it read.
ic::Status calibrate(const ExportFlags& flags, ic::InferenceModel& model) {
  ic::CalibrationOptions options;
  options.data_dir = flags.calibration_data;
  options.images = flags.calibration_images;
  IC_RETURN_IF_ERROR(ic::calibrate_on_cpu(model, options, flags.num_threads));
  std::cout << "Calibrated " << model.int8->layers.size() << " int8 layers on "
            << model.int8->calibration_images << " images of " << model.int8->calibration_data
            << std::endl;
  return ic::Status();
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
  Result<std::vector<std::string>> warmup_images = warmup_image_paths(flags.warmup_images);
  if (!warmup_images.ok()) {
    std::cerr << "export_model: " << warmup_images.status().message() << std::endl;
    return 2;
  }
  Result<InferenceModel> model = load_for_inference(flags.model_dir, flags.checkpoint);
  if (!model.ok()) {
    std::cerr << "export_model: " << model.status().message() << std::endl;
    return exit_code_for(model.status());
  }
  if (flags.format == ExportFormat::int8) {
    Status calibrated = calibrate(flags, *model);
    if (!calibrated.ok()) {
      std::cerr << "export_model: " << calibrated.message() << std::endl;
      return exit_code_for(calibrated);
    }
  }
  Result<std::string> written =
      export_trained_model(*model, flags.export_dir, flags.format, *warmup_images);
  if (!written.ok()) {
    std::cerr << "export_model: " << written.status().message() << std::endl;
    return exit_code_for(written.status());
  }
  std::cout << "Exported " << model->checkpoint << " (global step " << model->global_step << ", "
            << describe(model->meta) << ") as " << choice_name(flags.format) << " to " << *written
            << std::endl;
  if (!warmup_images->empty()) {
    std::cout << "Wrote " << warmup_images->size() << " warm-up requests to " << *written << "/"
              << kWarmupRequestsFile << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ic::run_guarded("export_model", [&] { return export_main(argc, argv); });
}
