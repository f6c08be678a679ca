// imagenet_to_tfrecord: our imagenet_to_gcs.py. Converts a raw ImageNet tree
//   RAW/train/<synset>/*.JPEG, RAW/validation/*.JPEG, RAW/synset_labels.txt
// into TFRecord shards train-NNNNN-of-01024 / validation-NNNNN-of-00128 in
// --local_scratch_dir. Progress and skipped images go to stderr, the summary to stdout.
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
#include "data/imagenet_converter.h"

DEFINE_string(raw_data_dir, "", "Directory holding train/, validation/ and synset_labels.txt");
DEFINE_string(local_scratch_dir, "", "Output directory for the TFRecord shards");
DEFINE_int32(train_shards, 1024, "Number of training shards");
DEFINE_int32(validation_shards, 128, "Number of validation shards");
DEFINE_int32(num_threads, 0, "Shards converted in parallel (0 = one per CPU core)");
DEFINE_bool(resume, false, "Keep shards an earlier, interrupted run completed");
DEFINE_uint64(shuffle_seed, 0, "Seed of the training-list shuffle (std::mt19937_64)");
DEFINE_int64(max_image_pixels, 100000000,
             "Images whose header claims more pixels are skipped (reported), never decoded");
DEFINE_bool(reencode_grayscale, true, "Re-encode grayscale JPEGs as RGB (TensorFlow keeps them)");

namespace {

int tool_main(int argc, char** argv) {
  static const std::vector<std::string> kFlagFiles = {"imagenet_to_tfrecord.cc"};
  const ic::ProgramHelp help{
      "imagenet_to_tfrecord",
      "converts a raw ImageNet tree (train/<synset>/*.JPEG, validation/*.JPEG, synset_labels.txt) "
      "to TFRecord shards, as the reference's imagenet_to_gcs.py",
      "imagenet_to_tfrecord --raw_data_dir=/data/ILSVRC2012 --local_scratch_dir=/tmp/imagenet", ""};
  if (std::optional<int> exit_code = ic::start_tool(help, kFlagFiles, argc, argv))
    return *exit_code;
  if (FLAGS_raw_data_dir.empty() || FLAGS_local_scratch_dir.empty()) {
    std::fprintf(stderr,
                 "imagenet_to_tfrecord: --raw_data_dir and --local_scratch_dir are required\n");
    return 2;
  }
  if (FLAGS_max_image_pixels < 1) {
    std::fprintf(stderr, "imagenet_to_tfrecord: --max_image_pixels must be >= 1\n");
    return 2;
  }
  if (FLAGS_train_shards < 1 || FLAGS_validation_shards < 1) {
    std::fprintf(stderr,
                 "imagenet_to_tfrecord: --train_shards and --validation_shards must be >= 1\n");
    return 2;
  }
  if (FLAGS_num_threads < 0) {
    std::fprintf(stderr, "imagenet_to_tfrecord: --num_threads must be >= 0\n");
    return 2;
  }
  ic::ConverterOptions options;
  options.raw_data_dir = FLAGS_raw_data_dir;
  options.output_dir = FLAGS_local_scratch_dir;
  options.train_shards = FLAGS_train_shards;
  options.validation_shards = FLAGS_validation_shards;
  options.num_threads = FLAGS_num_threads > 0
                            ? FLAGS_num_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.resume = FLAGS_resume;
  options.shuffle_seed = FLAGS_shuffle_seed;
  options.reencode_grayscale = FLAGS_reencode_grayscale;
  options.max_image_pixels = FLAGS_max_image_pixels;
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
