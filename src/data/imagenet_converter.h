// The ImageNet converter's logic (our imagenet_to_gcs.py): a raw tree
//   <raw>/train/<synset>/*.JPEG, <raw>/validation/*.JPEG, <raw>/synset_labels.txt
// becomes TFRecord shards train-00000-of-01024 ... and validation-00000-of-00128 ... of
// tf.Example records (data/example.h). Labels are 1..N over the sorted union of synsets.
// The training list is shuffled with a fixed seed: std::mt19937_64(seed) Fisher-Yates over
// the sorted file list (Python's random.shuffle cannot be reproduced bit for bit, so the
// order differs from TensorFlow's converter, but it is the same on every run and machine).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/image_codec.h"

namespace ic {

// "train-00003-of-01024": TensorFlow's '%s-%.5d-of-%.5d'.
std::string shard_name(const std::string& prefix, int shard, int num_shards);

// Shard k of n over `count` items: contiguous chunks of ceil(count / n); trailing shards may
// be empty (they are still written, so every name of the set exists).
struct ShardRange {
  int64_t begin = 0, end = 0;
};
ShardRange shard_range(int64_t count, int num_shards, int shard);

struct RawImage {
  std::string path;    // full path of the file
  std::string synset;  // e.g. n01440764
};

struct RawImageNet {
  std::vector<RawImage> train;            // shuffled (see above)
  std::vector<RawImage> validation;       // sorted by file name, synsets from synset_labels.txt
  std::map<std::string, int64_t> labels;  // synset -> 1..N
};

// Lists the raw tree. Image files are those ending in .JPEG (any case; .jpg too). Either
// split may be absent, not both. validation/ with one folder per synset is accepted when
// synset_labels.txt is absent (an older ImageNet layout).
Result<RawImageNet> list_raw_imagenet(const std::string& raw_data_dir, uint64_t shuffle_seed);

// One image made ready for a record: the bytes to store and the decoded size.
struct PreparedImage {
  std::string encoded;  // JPEG bytes
  int height = 0, width = 0;
  bool reencoded = false;  // CMYK / PNG / grayscale input re-encoded as RGB JPEG quality 100
};

// What the converter does to each file's bytes (found by content, not by name): PNG data,
// CMYK/YCCK JPEGs and (if reencode_grayscale) grayscale JPEGs are decoded and re-encoded as
// RGB JPEG quality 100; any other JPEG is stored unchanged. Every image is decoded once,
// which also rejects broken files. An error says why the image is unusable.
// An image whose header claims more than max_pixels pixels is refused before any decoding.
Result<PreparedImage> prepare_image(std::string_view bytes, bool reencode_grayscale = true,
                                    int64_t max_pixels = kDefaultMaxImagePixels);

struct ConverterOptions {
  std::string raw_data_dir;
  std::string output_dir;  // --local_scratch_dir
  int train_shards = 1024;
  int validation_shards = 128;
  int num_threads = 4;
  bool resume = false;  // keep shards that already exist complete
  uint64_t shuffle_seed = 0;
  bool reencode_grayscale = true;
  int64_t max_image_pixels = kDefaultMaxImagePixels;  // larger images are skipped, reported
  // The run fails when more than this fraction of a split's images converted in this run were
  // skipped (undecodable, unreadable, not image files). 1 = never: report and go on.
  double max_bad_input_fraction = 1.0;
  // Receives progress lines and per-image skip reports; null means quiet.
  std::function<void(const std::string&)> log;
};

struct SplitSummary {
  std::string split;                        // "train" or "validation"
  int64_t images = 0;                       // files listed
  int64_t written = 0;                      // records written in this run
  int64_t reencoded = 0;                    // of those, re-encoded
  int64_t skipped = 0;                      // unreadable images, left out
  int shards = 0;                           // shards of the split
  int shards_resumed = 0;                   // shards kept from an earlier run (--resume)
  std::vector<std::string> skipped_images;  // "path: reason"
};

struct ConversionSummary {
  SplitSummary train, validation;
  double seconds = 0;
};

// "train: 1281167 images, 1024 shards (0 resumed): 1281167 written, 23 re-encoded, 0 skipped"
std::string format_summary(const SplitSummary& split);

// Converts the whole tree, shards in parallel over options.num_threads. Each shard is
// written as "<name>.tmp-<pid>" and renamed when complete; stale temporary files of earlier
// runs are removed. An image that cannot be read or decoded is reported and skipped (more than
// max_bad_input_fraction of a split skipped is an error, after the shards are written); a
// write error stops the run.
Result<ConversionSummary> convert_imagenet(const ConverterOptions& options);

// The shard writer both the converter and make_fake_imagenet use: runs `jobs` shard jobs on
// `num_threads` threads; each job writes `records` into output_dir/name atomically.
struct ShardJob {
  std::string name;  // file name inside the output directory
  // Fills the shard: calls write(record) for each record; returns the first error.
  std::function<Status(const std::function<Status(std::string_view)>& write)> fill;
};
Status write_shards(const std::string& output_dir, std::vector<ShardJob>& jobs, int num_threads,
                    const std::function<void(size_t job_index)>& on_done);

}  // namespace ic
