// classify: top-5 classes of images (or preprocessed .npy arrays) under a trained checkpoint.
//   classify --model_dir=DIR [--labels_file=F] [--logits_out=L.npy] cat.jpg dog.png ...
// The flags live here, not in the library, so no program links two definitions of
// --model_dir (the training programs define their own).
#include "infer/classify.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>

#include "backend/backend.h"
#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "core/openmp_env.h"
#include "infer/npy.h"
#include "train/choices.h"
#include "train/flag_parser.h"

DEFINE_string(model_dir, "", "Directory whose latest checkpoint is used");
DEFINE_string(checkpoint, "",
              "A checkpoint (model.ckpt-N, model.ckpt-N.index or model.ckpt-N.safetensors) "
              "instead of --model_dir");
DEFINE_string(labels_file, "", "Label names: '<label> <name>' lines, or one name per line");
DEFINE_string(logits_out, "", "Write the raw logits [images, classes] to this .npy file");
DEFINE_int32(top_k, 5, "Classes printed per input");
DEFINE_string(device, "cpu", "cpu or cuda:N");
DEFINE_int32(num_threads, 0, "CPU compute threads; 0 = all cores");
DEFINE_int64(max_image_pixels, 100000000,
             "Images whose header claims more pixels are refused before decoding");

namespace {

int classify_main(int argc, char** argv) {
  using namespace ic;
  static const std::vector<std::string> kFlagFiles = {"classify.cc"};
  std::vector<std::string> inputs;
  const ProgramHelp help{"classify",
                         "prints the top-k classes of images under a trained checkpoint",
                         "classify --model_dir=MODEL_DIR --labels_file=LABELS cat.jpg dog.png",
                         "image files (JPEG/PNG) or preprocessed float32 .npy arrays"};
  if (std::optional<int> exit_code = start_tool(help, kFlagFiles, argc, argv, &inputs))
    return *exit_code;
  if (FLAGS_top_k < 1) {
    std::cerr << "classify: bad value " << FLAGS_top_k << " for --top_k (allowed: 1 or more)"
              << std::endl;
    return 2;
  }
  if (FLAGS_max_image_pixels < 1) {
    std::cerr << "classify: bad value " << FLAGS_max_image_pixels
              << " for --max_image_pixels (allowed: 1 or more)" << std::endl;
    return 2;
  }
  if (FLAGS_num_threads < 0) {
    std::cerr << "classify: bad value " << FLAGS_num_threads
              << " for --num_threads (allowed: 0 = all cores, or more)" << std::endl;
    return 2;
  }
  const std::optional<BackendOptions> backend_options =
      tool_backend_options("classify", FLAGS_device, FLAGS_num_threads);
  if (!backend_options) return 2;
  const BackendOptions& b = *backend_options;
  std::map<int64_t, std::string> label_names;
  if (!FLAGS_labels_file.empty()) {
    Result<std::map<int64_t, std::string>> read = read_label_names(FLAGS_labels_file);
    if (!read.ok()) {
      std::cerr << "classify: " << read.status().message() << std::endl;
      return exit_code_for(read.status());
    }
    label_names = std::move(*read);
  }
  Result<std::unique_ptr<Backend>> backend = make_backend(b);
  if (!backend.ok()) {
    std::cerr << "classify: " << backend.status().message() << std::endl;
    return exit_code_for(backend.status());
  }
  ClassifyOptions options{FLAGS_model_dir, FLAGS_checkpoint, inputs, FLAGS_top_k,
                          FLAGS_max_image_pixels};
  Result<ClassifyResult> result = classify(options, **backend);
  if (!result.ok()) {
    std::cerr << "classify: " << result.status().message() << std::endl;
    return exit_code_for(result.status());
  }
  std::cout << "checkpoint: " << result->checkpoint << " (global step " << result->global_step
            << ")\n";
  for (const auto& p : result->predictions) {
    std::cout << p.input << "\n";
    for (const auto& [label, probability] : p.top) {
      std::ostringstream line;
      line.setf(std::ios::fixed);
      line.precision(6);
      line << "  " << probability << "  " << label;
      auto name = label_names.find(label);
      if (name != label_names.end()) line << "  " << name->second;
      std::cout << line.str() << "\n";
    }
  }
  if (!FLAGS_logits_out.empty()) {
    const Status written =
        write_npy(FLAGS_logits_out, NpyArray{result->logits_shape, result->logits});
    if (!written.ok()) {
      std::cerr << "classify: " << written.message() << std::endl;
      return exit_code_for(written);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ic::use_short_openmp_spin(argv);
  return ic::run_guarded("classify", [&] { return classify_main(argc, argv); });
}
