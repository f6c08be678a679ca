// The model_dir's `checkpoint` index (io/checkpoint_dir.h): the input is the file's text. A
// state that parses must write back (checkpoint_state_text) to text that parses the same.
#include <cstdlib>
#include <filesystem>

#include "fuzz/fuzz_util.h"
#include "io/checkpoint_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string model_dir = [] {
    const std::string dir = ic::fuzz::ScratchDir::path() + "/model_dir";
    std::filesystem::create_directories(dir);
    return dir;
  }();
  ic::fuzz::write_scratch_file("model_dir/checkpoint", ic::fuzz::as_view(data, size));
  ic::Result<std::optional<ic::CheckpointState>> state = ic::read_checkpoint_state(model_dir);
  if (!state.ok()) return 0;
  if (!state->has_value()) std::abort();  // the file exists
  const ic::CheckpointState& parsed = **state;
  for (const std::string& entry : parsed.all_model_checkpoint_paths) {
    (void)ic::checkpoint_step(ic::resolve_checkpoint_path(model_dir, entry));
  }
  // Only looks at the named file (it never exists); reads nothing else.
  (void)ic::latest_checkpoint(model_dir);

  ic::fuzz::write_scratch_file("model_dir/checkpoint", ic::checkpoint_state_text(parsed));
  ic::Result<std::optional<ic::CheckpointState>> again = ic::read_checkpoint_state(model_dir);
  if (!again.ok() || !again->has_value() ||
      (*again)->model_checkpoint_path != parsed.model_checkpoint_path ||
      (*again)->all_model_checkpoint_paths != parsed.all_model_checkpoint_paths) {
    std::abort();
  }
  return 0;
}
