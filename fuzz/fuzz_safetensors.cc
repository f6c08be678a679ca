// safetensors checkpoints (io/safetensors.h): the input is a whole file. A file that reads
// must write back and read again to the same tensors.
#include <cstdlib>

#include "fuzz/fuzz_util.h"
#include "fuzz/same_checkpoint.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      ic::fuzz::write_scratch_file("model.safetensors", ic::fuzz::as_view(data, size));
  ic::Result<ic::SafetensorsFile> file = ic::read_safetensors(path);
  if (!file.ok()) return 0;
  uint64_t total = 0;
  for (const ic::TensorEntry& t : file->tensors) total += t.bytes.size();
  if (total > size) std::abort();  // tensor bytes come from the file

  // The writer refuses what the reader accepted only for names it reserves ("" is one).
  const std::string copy = ic::fuzz::ScratchDir::path() + "/copy.safetensors";
  if (!ic::write_safetensors(copy, *file).ok()) return 0;
  ic::Result<ic::SafetensorsFile> again = ic::read_safetensors(copy);
  if (!again.ok()) std::abort();
  ic::fuzz::abort_unless_same(*file, *again);
  return 0;
}
