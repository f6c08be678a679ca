// inspect_checkpoint: lists a checkpoint's metadata and tensors (name, dtype, shape), in
// either format, as TensorFlow's inspect_checkpoint tool lists a bundle; optionally writes
// the same tensors and metadata in the other format (a lossless conversion).
//   inspect_checkpoint --file_name=model_dir/model.ckpt-1200
//   inspect_checkpoint --file_name=m/model.ckpt-1200 --write_safetensors=/tmp/copy.safetensors
//   inspect_checkpoint --file_name=m/model.ckpt-1200.safetensors
//   --write_bundle=/tmp/model.ckpt-1200
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "io/checkpoint_dir.h"
#include "io/safetensors.h"
#include "io/tensor_bundle.h"

namespace {

struct InspectFlags {
  std::string file_name, model_dir, write_safetensors, write_bundle;
};

const ic::FlagTable<InspectFlags>& inspect_flags() {
  using namespace ic::flag_entries;
  using O = InspectFlags;
  static const ic::FlagTable<O> table({
      text("file_name", &O::file_name,
           "The checkpoint: a prefix (model.ckpt-N), its .index, or a .safetensors file"),
      text("model_dir", &O::model_dir, "Inspect the latest checkpoint of this directory instead"),
      text("write_safetensors", &O::write_safetensors,
           "Also write the checkpoint as this safetensors file"),
      text("write_bundle", &O::write_bundle,
           "Also write the checkpoint as a TensorFlow bundle at this prefix"),
  });
  return table;
}

int inspect_main(int argc, char** argv) {
  using namespace ic;
  InspectFlags flags;
  std::vector<std::string> arguments;
  const ProgramHelp help{
      .name = "inspect_checkpoint",
      .about =
          "lists a checkpoint's metadata and tensors (TensorFlow bundle or safetensors), and can "
          "convert it to the other format",
      .example =
          "inspect_checkpoint --model_dir=MODEL_DIR --write_safetensors=/tmp/copy.safetensors"};
  if (std::optional<int> exit_code =
          start_tool(help, inspect_flags(), argc, argv, &flags, &arguments))
    return *exit_code;
  std::string path = flags.file_name;
  if (path.empty() && !flags.model_dir.empty()) {
    Result<std::optional<std::string>> latest = latest_checkpoint(flags.model_dir);
    if (!latest.ok()) {
      std::cerr << "inspect_checkpoint: " << latest.status().message() << std::endl;
      return exit_code_for(latest.status());
    }
    if (!latest->has_value()) {
      std::cerr << "inspect_checkpoint: no checkpoint in " << flags.model_dir << std::endl;
      return 1;
    }
    path = **latest;
  }
  if (path.empty() || !arguments.empty()) {
    std::cerr << "inspect_checkpoint: give --file_name or --model_dir (--help lists the flags)"
              << std::endl;
    return 2;
  }
  Result<CheckpointContents> contents = read_checkpoint(path);
  if (!contents.ok()) {
    std::cerr << "inspect_checkpoint: " << contents.status().message() << std::endl;
    return exit_code_for(contents.status());
  }
  std::cout << "checkpoint: " << path << "\n";
  for (const auto& [key, value] : contents->metadata) {
    // A training input position (data/input_position.h) is many lines: its first line only.
    const size_t line_end = value.find('\n');
    if (line_end == std::string::npos) {
      std::cout << "metadata " << key << ": " << value << "\n";
    } else {
      std::cout << "metadata " << key << ": " << value.substr(0, line_end) << " ("
                << std::count(value.begin(), value.end(), '\n') << " lines)\n";
    }
  }
  for (const TensorEntry& t : contents->tensors) {
    std::cout << t.name << " " << dtype_name(t.dtype) << " " << t.shape.str() << "\n";
  }
  std::vector<TensorView> views;
  for (const TensorEntry& t : contents->tensors) {
    views.push_back({t.name, t.dtype, t.shape, t.bytes.data()});
  }
  if (!flags.write_safetensors.empty()) {
    const Status written = write_safetensors(flags.write_safetensors, contents->metadata, views);
    if (!written.ok()) {
      std::cerr << "inspect_checkpoint: " << written.message() << std::endl;
      return exit_code_for(written);
    }
  }
  if (!flags.write_bundle.empty()) {
    const Status written = write_tensor_bundle(flags.write_bundle, contents->metadata, views);
    if (!written.ok()) {
      std::cerr << "inspect_checkpoint: " << written.message() << std::endl;
      return exit_code_for(written);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ic::run_guarded("inspect_checkpoint", [&] { return inspect_main(argc, argv); });
}
