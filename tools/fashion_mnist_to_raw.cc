// fashion_mnist_to_raw: turns Debian's dataset-fashion-mnist (IDX files) into the raw
// ImageNet layout, so imagenet_to_tfrecord and the trainer run on real images:
//   fashion_mnist_to_raw --output_dir=/tmp/fmnist_raw
//   imagenet_to_tfrecord --raw_data_dir=/tmp/fmnist_raw --local_scratch_dir=/tmp/fmnist
//       --train_shards=16 --validation_shards=4
// Labels become 1..10 (train with --num_classes=11). See docs/data.md.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "data/fashion_mnist.h"

namespace {

struct FashionMnistFlags {
  std::string input_dir = "/usr/share/datasets/fashion-mnist";
  std::string output_dir;
  int64_t max_train_images = 0;
  int64_t max_validation_images = 0;
  int32_t jpeg_quality = 95;
};

const ic::FlagTable<FashionMnistFlags>& fashion_mnist_flags() {
  using namespace ic::flag_entries;
  using O = FashionMnistFlags;
  static const ic::FlagTable<O> table({
      text("input_dir", &O::input_dir,
           "Directory with train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
           "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (or ungzipped)"),
      text("output_dir", &O::output_dir,
           "Where to write train/, validation/ and synset_labels.txt"),
      number("max_train_images", &O::max_train_images, any_value(),
             "Write at most this many training images (0 = all 60000)"),
      number("max_validation_images", &O::max_validation_images, any_value(),
             "At most this many validation images (0 = all 10000)"),
      number("jpeg_quality", &O::jpeg_quality, from_to(1, 100), "JPEG quality"),
  });
  return table;
}

int tool_main(int argc, char** argv) {
  FashionMnistFlags flags;
  const ic::ProgramHelp help{
      .name = "fashion_mnist_to_raw",
      .about =
          "turns Fashion-MNIST's IDX files into the raw ImageNet tree imagenet_to_tfrecord reads",
      .example = "fashion_mnist_to_raw --output_dir=/tmp/fashion_mnist/raw"};
  if (std::optional<int> exit_code =
          ic::start_tool(help, fashion_mnist_flags(), argc, argv, &flags))
    return *exit_code;
  ic::FashionMnistOptions o;
  o.input_dir = flags.input_dir;
  o.output_dir = flags.output_dir;
  o.max_train_images = flags.max_train_images;
  o.max_validation_images = flags.max_validation_images;
  o.jpeg_quality = flags.jpeg_quality;
  auto summary = ic::fashion_mnist_to_raw(o);
  if (!summary.ok()) {
    std::fprintf(stderr, "fashion_mnist_to_raw: %s\n", summary.status().message().c_str());
    return ic::exit_code_for(summary.status());
  }
  std::printf("wrote %lld training and %lld validation images of 10 classes to %s\n",
              static_cast<long long>(summary->train_images),
              static_cast<long long>(summary->validation_images), o.output_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ic::run_guarded("fashion_mnist_to_raw", [&] { return tool_main(argc, argv); });
}
