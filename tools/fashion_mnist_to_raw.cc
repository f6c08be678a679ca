// fashion_mnist_to_raw: turns Debian's dataset-fashion-mnist (IDX files) into the raw
// ImageNet layout, so imagenet_to_tfrecord and the trainer run on real images:
//   fashion_mnist_to_raw --output_dir=/tmp/fmnist_raw
//   imagenet_to_tfrecord --raw_data_dir=/tmp/fmnist_raw --local_scratch_dir=/tmp/fmnist
//       --train_shards=16 --validation_shards=4
// Labels become 1..10 (train with --num_classes=11). See docs/data.md.
#include <gflags/gflags.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "data/fashion_mnist.h"

DEFINE_string(input_dir, "/usr/share/datasets/fashion-mnist",
              "Directory with train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
              "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (or ungzipped)");
DEFINE_string(output_dir, "", "Where to write train/, validation/ and synset_labels.txt");
DEFINE_int64(max_train_images, 0, "Write at most this many training images (0 = all 60000)");
DEFINE_int64(max_validation_images, 0, "At most this many validation images (0 = all 10000)");
DEFINE_int32(jpeg_quality, 95, "JPEG quality, 1..100");

namespace {

int tool_main(int argc, char** argv) {
  static const std::vector<std::string> kFlagFiles = {"fashion_mnist_to_raw.cc"};
  const ic::ProgramHelp help{
      "fashion_mnist_to_raw",
      "turns Fashion-MNIST's IDX files into the raw ImageNet tree imagenet_to_tfrecord reads",
      "fashion_mnist_to_raw --output_dir=/tmp/fashion_mnist/raw", ""};
  if (std::optional<int> exit_code = ic::start_tool(help, kFlagFiles, argc, argv))
    return *exit_code;
  if (FLAGS_jpeg_quality < 1 || FLAGS_jpeg_quality > 100) {
    std::fprintf(stderr, "fashion_mnist_to_raw: --jpeg_quality must be in 1..100\n");
    return 2;
  }
  ic::FashionMnistOptions o;
  o.input_dir = FLAGS_input_dir;
  o.output_dir = FLAGS_output_dir;
  o.max_train_images = FLAGS_max_train_images;
  o.max_validation_images = FLAGS_max_validation_images;
  o.jpeg_quality = FLAGS_jpeg_quality;
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
