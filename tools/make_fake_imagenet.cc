// make_fake_imagenet: fake ImageNet in the converter's exact format (TFRecord shards of
// tf.Example records holding random but plausible JPEGs, labels 1..num_classes), for
// testing the real-data path; --raw_layout writes the converter's input tree instead.
#include <gflags/gflags.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "data/fake_imagenet.h"

DEFINE_string(output_dir, "", "Directory for the shards (or the raw tree with --raw_layout)");
DEFINE_int64(num_train_images, 1024, "Training images");
DEFINE_int64(num_validation_images, 128, "Validation images");
DEFINE_int32(train_shards, 8, "Training shards");
DEFINE_int32(validation_shards, 2, "Validation shards");
DEFINE_int32(image_size, 299, "Image height (and width unless --image_width is set)");
DEFINE_int32(image_width, 0, "Image width (0 = --image_size)");
DEFINE_int32(num_classes, 1000, "Classes; labels are 1..num_classes (0 is background)");
DEFINE_uint64(seed, 0, "Random seed; the same seed gives the same files");
DEFINE_int32(jpeg_quality, 90, "JPEG quality, 1..100");
DEFINE_int32(num_threads, 0, "Shards written in parallel (0 = one per CPU core)");
DEFINE_bool(raw_layout, false,
            "Write train/<synset>/*.JPEG, validation/*.JPEG and synset_labels.txt (the input "
            "of imagenet_to_tfrecord) instead of TFRecord shards");

namespace {

int tool_main(int argc, char** argv) {
  static const std::vector<std::string> kFlagFiles = {"make_fake_imagenet.cc"};
  const ic::ProgramHelp help{
      "make_fake_imagenet",
      "writes fake ImageNet in the converter's exact format (TFRecord shards of random but "
      "plausible JPEGs), or the raw tree the converter reads",
      "make_fake_imagenet --output_dir=/tmp/imagenet --num_train_images=64 "
      "--num_validation_images=10 --image_size=96 --num_classes=10",
      ""};
  if (std::optional<int> exit_code = ic::start_tool(help, kFlagFiles, argc, argv))
    return *exit_code;
  ic::FakeImageNetOptions o;
  o.output_dir = FLAGS_output_dir;
  o.num_train_images = FLAGS_num_train_images;
  o.num_validation_images = FLAGS_num_validation_images;
  o.train_shards = FLAGS_train_shards;
  o.validation_shards = FLAGS_validation_shards;
  o.image_size = FLAGS_image_size;
  o.image_width = FLAGS_image_width;
  o.num_classes = FLAGS_num_classes;
  o.seed = FLAGS_seed;
  o.jpeg_quality = FLAGS_jpeg_quality;
  o.num_threads = FLAGS_num_threads > 0
                      ? FLAGS_num_threads
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.raw_layout = FLAGS_raw_layout;
  const ic::Status status = ic::make_fake_imagenet(o);
  if (!status.ok()) {
    std::fprintf(stderr, "make_fake_imagenet: %s\n", status.message().c_str());
    return ic::exit_code_for(status);
  }
  std::fprintf(stderr, "make_fake_imagenet: wrote %lld training and %lld validation images to %s\n",
               static_cast<long long>(o.num_train_images),
               static_cast<long long>(o.num_validation_images), o.output_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ic::run_guarded("make_fake_imagenet", [&] { return tool_main(argc, argv); });
}
