// make_fake_imagenet: fake ImageNet in the converter's exact format (TFRecord shards of
// tf.Example records holding random but plausible JPEGs, labels 1..num_classes), for
// testing the real-data path; --raw_layout writes the converter's input tree instead.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/backend_options.h"
#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "data/fake_imagenet.h"

namespace {

// The sizes' ranges are make_fake_imagenet's (data/fake_imagenet.cc) to check, for every
// caller; the table checks what only this tool reads.
struct FakeImageNetFlags {
  std::string output_dir;
  int64_t num_train_images = 1024;
  int64_t num_validation_images = 128;
  int32_t train_shards = 8;
  int32_t validation_shards = 2;
  int32_t image_size = 299;
  int32_t image_width = 0;
  int32_t num_classes = 1000;
  int64_t seed = 0;
  int32_t jpeg_quality = 90;
  int32_t num_threads = 0;
  bool raw_layout = false;
};

const ic::FlagTable<FakeImageNetFlags>& fake_imagenet_flags() {
  using namespace ic::flag_entries;
  using O = FakeImageNetFlags;
  static const ic::FlagTable<O> table({
      text("output_dir", &O::output_dir,
           "Directory for the shards (or the raw tree with --raw_layout)"),
      number("num_train_images", &O::num_train_images, any_value(), "Training images"),
      number("num_validation_images", &O::num_validation_images, any_value(), "Validation images"),
      number("train_shards", &O::train_shards, any_value(), "Training shards"),
      number("validation_shards", &O::validation_shards, any_value(), "Validation shards"),
      number("image_size", &O::image_size, any_value(),
             "Image height (and width unless --image_width is set)"),
      number("image_width", &O::image_width, any_value(), "Image width (0 = --image_size)"),
      number("num_classes", &O::num_classes, any_value(),
             "Classes; labels are 1..num_classes (0 is background)"),
      number("seed", &O::seed, at_least(0), "Random seed; the same seed gives the same files"),
      number("jpeg_quality", &O::jpeg_quality, any_value(), "JPEG quality, 1..100"),
      number("num_threads", &O::num_threads, at_least(0),
             "Shards written in parallel (0 = one per CPU core)"),
      boolean("raw_layout", &O::raw_layout,
              "Write train/<synset>/*.JPEG, validation/*.JPEG and synset_labels.txt (the input "
              "of imagenet_to_tfrecord) instead of TFRecord shards"),
  });
  return table;
}

int tool_main(int argc, char** argv) {
  FakeImageNetFlags flags;
  const ic::ProgramHelp help{
      .name = "make_fake_imagenet",
      .about =
          "writes fake ImageNet in the converter's exact format (TFRecord shards of random but "
          "plausible JPEGs), or the raw tree the converter reads",
      .example =
          "make_fake_imagenet --output_dir=/tmp/imagenet --num_train_images=64 "
          "--num_validation_images=10 --image_size=96 --num_classes=10"};
  if (std::optional<int> exit_code =
          ic::start_tool(help, fake_imagenet_flags(), argc, argv, &flags))
    return *exit_code;
  ic::FakeImageNetOptions o;
  o.output_dir = flags.output_dir;
  o.num_train_images = flags.num_train_images;
  o.num_validation_images = flags.num_validation_images;
  o.train_shards = flags.train_shards;
  o.validation_shards = flags.validation_shards;
  o.image_size = flags.image_size;
  o.image_width = flags.image_width;
  o.num_classes = flags.num_classes;
  o.seed = static_cast<uint64_t>(flags.seed);
  o.jpeg_quality = flags.jpeg_quality;
  o.num_threads = flags.num_threads > 0 ? flags.num_threads : ic::machine_cores();
  o.raw_layout = flags.raw_layout;
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
