// imagenet_to_tfrecord: our imagenet_to_gcs.py. Converts a raw ImageNet tree
//   RAW/train/<synset>/*.JPEG, RAW/validation/*.JPEG, RAW/synset_labels.txt
// into TFRecord shards train-NNNNN-of-01024 / validation-NNNNN-of-00128 in
// --local_scratch_dir. Progress and skipped images go to stderr, the summary to stdout.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/backend_options.h"
#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "data/image_codec.h"
#include "data/imagenet_converter.h"

namespace {

struct ConverterFlags {
  std::string raw_data_dir, local_scratch_dir;
  int32_t train_shards = 1024;
  int32_t validation_shards = 128;
  int32_t num_threads = 0;
  bool resume = false;
  int64_t shuffle_seed = 0;
  int64_t max_image_pixels = ic::kDefaultMaxImagePixels;
  double max_bad_input_fraction = 1.0;
  bool reencode_grayscale = true;
};

const ic::FlagTable<ConverterFlags>& converter_flags() {
  using namespace ic::flag_entries;
  using O = ConverterFlags;
  static const ic::FlagTable<O> table({
      text("raw_data_dir", &O::raw_data_dir,
           "Directory holding train/, validation/ and synset_labels.txt"),
      text("local_scratch_dir", &O::local_scratch_dir, "Output directory for the TFRecord shards"),
      number("train_shards", &O::train_shards, at_least(1), "Number of training shards"),
      number("validation_shards", &O::validation_shards, at_least(1),
             "Number of validation shards"),
      number("num_threads", &O::num_threads, at_least(0),
             "Shards converted in parallel (0 = one per CPU core)"),
      boolean("resume", &O::resume, "Keep shards an earlier, interrupted run completed"),
      number("shuffle_seed", &O::shuffle_seed, at_least(0),
             "Seed of the training-list shuffle (std::mt19937_64)"),
      number("max_image_pixels", &O::max_image_pixels, at_least(1),
             "Images whose header claims more pixels are skipped (reported), never decoded"),
      number("max_bad_input_fraction", &O::max_bad_input_fraction, from_to(0, 1),
             "Fail when more than this fraction of a split's images is skipped (unreadable, "
             "undecodable or not an image file; 1 = report them and go on)"),
      boolean("reencode_grayscale", &O::reencode_grayscale,
              "Re-encode grayscale JPEGs as RGB (TensorFlow keeps them)"),
  });
  return table;
}

int tool_main(int argc, char** argv) {
  ConverterFlags flags;
  const ic::ProgramHelp help{
      .name = "imagenet_to_tfrecord",
      .about =
          "converts a raw ImageNet tree (train/<synset>/*.JPEG, validation/*.JPEG, "
          "synset_labels.txt) to TFRecord shards, as the reference's imagenet_to_gcs.py",
      .example =
          "imagenet_to_tfrecord --raw_data_dir=/data/ILSVRC2012 --local_scratch_dir=/tmp/imagenet"};
  if (std::optional<int> exit_code = ic::start_tool(help, converter_flags(), argc, argv, &flags))
    return *exit_code;
  if (flags.raw_data_dir.empty() || flags.local_scratch_dir.empty()) {
    std::fprintf(stderr,
                 "imagenet_to_tfrecord: --raw_data_dir and --local_scratch_dir are required\n");
    return 2;
  }
  ic::ConverterOptions options;
  options.raw_data_dir = flags.raw_data_dir;
  options.output_dir = flags.local_scratch_dir;
  options.train_shards = flags.train_shards;
  options.validation_shards = flags.validation_shards;
  options.num_threads = flags.num_threads > 0 ? flags.num_threads : ic::machine_cores();
  options.resume = flags.resume;
  options.shuffle_seed = static_cast<uint64_t>(flags.shuffle_seed);
  options.reencode_grayscale = flags.reencode_grayscale;
  options.max_image_pixels = flags.max_image_pixels;
  options.max_bad_input_fraction = flags.max_bad_input_fraction;
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "imagenet_to_tfrecord: %s\n", line.c_str());
  };
  auto summary = ic::convert_imagenet(options);
  if (!summary.ok()) {
    std::fprintf(stderr, "imagenet_to_tfrecord: %s\n", summary.status().message().c_str());
    return ic::exit_code_for(summary.status());
  }
  for (const ic::SplitSummary* split : {&summary->train, &summary->validation}) {
    if (split->images == 0) continue;
    std::printf("%s\n", ic::format_summary(*split).c_str());
  }
  const int64_t written = summary->train.written + summary->validation.written;
  std::printf("converted %lld images in %.1f s (%.1f images/sec)\n",
              static_cast<long long>(written), summary->seconds,
              summary->seconds > 0 ? written / summary->seconds : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ic::run_guarded("imagenet_to_tfrecord", [&] { return tool_main(argc, argv); });
}
