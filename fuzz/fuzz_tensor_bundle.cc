// TensorFlow V2 checkpoints (io/tensor_bundle.h): the input is both files of a bundle, a 4-byte
// little-endian length of the .index (a LevelDB table), then the .index, then the data file. A
// bundle that reads must write back and read again to the same tensors and metadata.
#include <cstdlib>
#include <cstring>

#include "fuzz/fuzz_util.h"
#include "fuzz/same_checkpoint.h"
#include "io/tensor_bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t index_size = 0;
  for (int i = 3; i >= 0; --i) index_size = (index_size << 8) | data[i];
  const std::string_view rest = ic::fuzz::as_view(data + 4, size - 4);
  const std::string_view index = rest.substr(0, std::min<size_t>(index_size, rest.size()));
  const std::string_view bundle_data = rest.substr(index.size());
  const std::string prefix = ic::fuzz::ScratchDir::path() + "/model.ckpt-1";
  ic::fuzz::write_scratch_file("model.ckpt-1.index", index);
  ic::fuzz::write_scratch_file("model.ckpt-1.data-00000-of-00001", bundle_data);
  ic::Result<ic::CheckpointContents> file = ic::read_tensor_bundle(prefix);
  if (!file.ok()) return 0;
  uint64_t total = 0;
  for (const ic::TensorEntry& t : file->tensors) total += t.bytes.size();
  if (total > bundle_data.size()) std::abort();  // tensor bytes come from the data file

  std::vector<ic::TensorView> views;
  for (const ic::TensorEntry& t : file->tensors)
    views.push_back({t.name, t.dtype, t.shape, t.bytes.empty() ? nullptr : t.bytes.data()});
  const std::string copy = ic::fuzz::ScratchDir::path() + "/copy.ckpt-1";
  // The writer refuses only names it reserves, which the reader may have accepted.
  if (!ic::write_tensor_bundle(copy, file->metadata, views).ok()) return 0;
  ic::Result<ic::CheckpointContents> again = ic::read_tensor_bundle(copy);
  if (!again.ok()) std::abort();
  ic::fuzz::abort_unless_same(*file, *again);
  return 0;
}
