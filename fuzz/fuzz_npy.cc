// NumPy .npy arrays (infer/npy.h, classify's inputs): the input is a whole file. An array that
// reads has as many values as its shape says and writes back to a file that reads the same.
#include <cstdlib>
#include <cstring>

#include "fuzz/fuzz_util.h"
#include "infer/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ic::fuzz::write_scratch_file("input.npy", ic::fuzz::as_view(data, size));
  ic::Result<ic::NpyArray> array = ic::read_npy(path);
  if (!array.ok()) return 0;
  size_t count = 1;
  for (const int64_t d : array->shape) count *= static_cast<size_t>(d);
  if (count != array->data.size() || count * sizeof(float) > size) std::abort();

  const std::string copy = ic::fuzz::ScratchDir::path() + "/copy.npy";
  if (!ic::write_npy(copy, *array).ok()) std::abort();
  ic::Result<ic::NpyArray> again = ic::read_npy(copy);
  if (!again.ok() || again->shape != array->shape || again->data.size() != count ||
      (count > 0 &&
       std::memcmp(again->data.data(), array->data.data(), count * sizeof(float)) != 0)) {
    std::abort();
  }
  return 0;
}
