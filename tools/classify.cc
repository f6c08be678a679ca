// classify: top-5 classes of images (or preprocessed .npy arrays) under a trained checkpoint.
//   classify --model_dir=DIR [--labels_file=F] [--logits_out=L.npy] [--precision=float32]
//            cat.jpg dog.png ...
// Its flags are declared once, below: a table over ClassifyFlags (cli/flag_table.h).
#include "infer/classify.h"

#include <array>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "core/openmp_env.h"
#include "data/image_codec.h"
#include "infer/npy.h"
#include "runtime/precision.h"

namespace ic {
// --precision's names (runtime/precision.h's precision_name spells them the same), in the
// order its help and its error list them.
template <>
struct Choices<InferencePrecision> {
  static constexpr std::array<ChoiceName<InferencePrecision>, 3> names = {
      {{InferencePrecision::float32, "float32"},
       {InferencePrecision::bfloat16, "bfloat16"},
       {InferencePrecision::int8, "int8"}}};
};
}  // namespace ic

namespace {

struct ClassifyFlags {
  std::string model_dir, checkpoint, labels_file, logits_out;
  int32_t top_k = 5;
  ic::DeviceChoice device{ic::DeviceChoice::Kind::cpu, std::nullopt};
  int32_t num_threads = 0;
  int64_t max_image_pixels = ic::kDefaultMaxImagePixels;
  ic::InferencePrecision precision = ic::InferencePrecision::float32;
};

const ic::FlagTable<ClassifyFlags>& classify_flags() {
  using namespace ic::flag_entries;
  using O = ClassifyFlags;
  static const ic::FlagTable<O> table({
      text("model_dir", &O::model_dir, "Directory whose latest checkpoint is used"),
      text("checkpoint", &O::checkpoint,
           "A checkpoint (model.ckpt-N, model.ckpt-N.index or model.ckpt-N.safetensors) "
           "instead of --model_dir"),
      text("labels_file", &O::labels_file,
           "Label names: '<label> <name>' lines, or one name per line"),
      text("logits_out", &O::logits_out,
           "Write the raw logits [images, classes] to this .npy file"),
      number("top_k", &O::top_k, at_least(1), "Classes printed per input"),
      device(&O::device, EmptyDevice::refused, "Where the model runs (cuda: the first GPU)"),
      number("num_threads", &O::num_threads, at_least(0),
             "CPU compute threads; 0 = all cores (more than the cores: capped, with a notice)"),
      number("max_image_pixels", &O::max_image_pixels, at_least(1),
             "Images whose header claims more pixels are refused before decoding"),
      choice("precision", &O::precision,
             "What the model computes in: float32, bfloat16 (convolutions in bf16 where the "
             "CPU has it, else float32) or int8 (an int8 export only)"),
  });
  return table;
}

int classify_main(int argc, char** argv) {
  using namespace ic;
  ClassifyFlags flags;
  std::vector<std::string> inputs;
  const ProgramHelp help{
      .name = "classify",
      .about = "prints the top-k classes of images under a trained checkpoint",
      .example = "classify --model_dir=MODEL_DIR --labels_file=LABELS cat.jpg dog.png",
      .arguments = "image files (JPEG/PNG) or preprocessed float32 .npy arrays"};
  if (std::optional<int> exit_code =
          start_tool(help, classify_flags(), argc, argv, &flags, &inputs))
    return *exit_code;
  const std::optional<BackendOptions> backend_options =
      tool_backend_options("classify", flags.device, flags.num_threads);
  if (!backend_options) return 2;
  std::map<int64_t, std::string> label_names;
  if (!flags.labels_file.empty()) {
    Result<std::map<int64_t, std::string>> read = read_label_names(flags.labels_file);
    if (!read.ok()) {
      std::cerr << "classify: " << read.status().message() << std::endl;
      return exit_code_for(read.status());
    }
    label_names = std::move(*read);
  }
  Result<std::unique_ptr<Backend>> backend = make_backend(*backend_options);
  if (!backend.ok()) {
    std::cerr << "classify: " << backend.status().message() << std::endl;
    return exit_code_for(backend.status());
  }
  // The backend's description says whether bf16 is real here (or computes in float32).
  if (flags.precision == InferencePrecision::bfloat16)
    std::cerr << "classify: --precision=bfloat16 on " << (*backend)->description() << std::endl;
  ClassifyOptions options{flags.model_dir, flags.checkpoint,       inputs,
                          flags.top_k,     flags.max_image_pixels, flags.precision};
  Result<ClassifyResult> result = classify(options, **backend);
  if (!result.ok()) {
    std::cerr << "classify: " << result.status().message() << std::endl;
    return exit_code_for(result.status());
  }
  // The start-up timing may keep some layers in float32; say how many, as serve does.
  if (flags.precision == InferencePrecision::int8)
    std::cerr << "classify: int8: " << int8_layers_in_float32_note(result->graph_stats)
              << std::endl;
  if (flags.precision == InferencePrecision::bfloat16)
    std::cerr << "classify: bfloat16: " << result->graph_stats.bf16_activations
              << " values in bf16, " << result->graph_stats.float32_convolutions
              << " convolutions timed faster in float32 and run in float32" << std::endl;
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
  if (!flags.logits_out.empty()) {
    const Status written =
        write_npy(flags.logits_out, NpyArray{result->logits_shape, result->logits});
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
