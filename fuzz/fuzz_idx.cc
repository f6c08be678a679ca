// Fashion-MNIST's IDX image and label files (data/fashion_mnist.h), plain or gzipped: the
// input is a whole file, read both as images and as labels.
#include <cstdlib>

#include "data/fashion_mnist.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      ic::fuzz::write_scratch_file("data-idx-ubyte", ic::fuzz::as_view(data, size));
  ic::Result<ic::IdxImages> images = ic::read_idx_images(path);
  if (images.ok() && images->pixels.size() != static_cast<size_t>(images->count) *
                                                  static_cast<size_t>(images->rows) *
                                                  static_cast<size_t>(images->cols)) {
    std::abort();
  }
  (void)ic::read_idx_labels(path);
  return 0;
}
