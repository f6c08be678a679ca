// The ImageNet converter's synset_labels.txt (data/imagenet_converter.h, list_raw_imagenet):
// the input is the labels file of a raw tree with three validation images. A listing that
// succeeds gives each image one synset and numbers the synsets 1..N.
#include <cstdlib>
#include <filesystem>

#include "data/imagenet_converter.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string raw = [] {
    const std::string dir = ic::fuzz::ScratchDir::path() + "/raw";
    std::filesystem::create_directories(dir + "/validation");
    for (const char* name : {"a.JPEG", "b.JPEG", "c.JPEG"}) {
      ic::fuzz::write_scratch_file(std::string("raw/validation/") + name, "");
    }
    return dir;
  }();
  ic::fuzz::write_scratch_file("raw/synset_labels.txt", ic::fuzz::as_view(data, size));
  ic::Result<ic::RawImageNet> listed = ic::list_raw_imagenet(raw, 0);
  if (!listed.ok()) return 0;
  if (listed->validation.size() != 3 || listed->labels.empty() || listed->labels.size() > 3) {
    std::abort();
  }
  int64_t expected = 1;
  for (const auto& [synset, label] : listed->labels) {
    if (synset.empty() || label != expected++) std::abort();
  }
  for (const ic::RawImage& image : listed->validation) {
    if (listed->labels.count(image.synset) != 1) std::abort();
  }
  return 0;
}
