// The threaded input pipeline: TFRecord shards of tf.Example ImageNet records in, batches of
// preprocessed NHWC float images out (the reference's tf.data input function).
//
// Training: the shard files (`train-*`, every num_shards-th from shard_index) in a new shuffled
// order each epoch, repeated forever; num_files_infeed files read interleaved one record at a
// time; a shuffle buffer of records; decode + Inception/VGG training preprocessing on
// num_threads workers. Eval: `validation-*` files in sorted order, one epoch, every record once;
// the last partial batch is padded with rows labelled -1.
//
// Reproducibility: the record stream (file order, interleave, shuffle) is a function of the seed,
// and each record's preprocessing draws from an Rng seeded by (seed, position in the stream), so
// with deterministic=true the same seed gives the same batches whatever the thread timing.
// Training: position() says where the stream stands after the batches handed out so far
// (data/input_position.h), and a pipeline created from that position hands out the very
// batches the first one would have handed out next, bit for bit: resuming is exact.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/input_position.h"
#include "data/preprocessing.h"

namespace ic {

struct InputOptions {
  std::string data_dir;
  bool training = true;
  int64_t batch_size = 32;
  int height = 299, width = 299;
  PreprocessOptions::Kind preprocessing = PreprocessOptions::Kind::inception;
  bool use_annotated_bbox = false;  // crop around image/object/bbox/* when a record has them
  int num_threads = 2;              // decode + preprocess workers
  uint64_t seed = 0;
  bool deterministic = true;            // false: the seed is mixed with a random device
  int shard_index = 0, num_shards = 1;  // data-parallel worker i of n takes files i, i+n, ...
  bool skip_corrupt_records = true;     // false: a corrupt record is an error from next()
  int num_files_infeed = 8;             // files read interleaved
  int shuffle_buffer = 1000;            // records (training only)
  int prefetch_batches = 2;             // batches prepared ahead of the consumer
  // Evaluation: the whole evaluation (all shards together) stops after this many records
  // (0 = all): each shard takes its share, all of it when it reads every file.
  int64_t max_eval_images = 0;
  // Evaluation-style reading (sorted, once, evaluation preprocessing) of the files whose names
  // start with this instead of "validation-": int8 calibration reads "train-" so.
  std::string eval_file_prefix = "validation-";
  int vgg_resize_side_min = 300, vgg_resize_side_max = 600;
  // Inception training preprocessing: the crop sampler (sample_distorted_bounding_box's
  // arguments) and the colour distortion's ranges.
  DistortedBoxOptions crop;
  float cb_range = 0.1f, cr_range = 0.1f;
  bool fast_color_distort = true;  // false: TF-slim brightness + saturation (PreprocessOptions)
  // Bad input. A record whose label is outside [0, num_classes) stops the pipeline with an error
  // naming the file and the record's byte offset (0 = labels not checked): training on it would
  // be silently wrong. An image whose header claims more than max_image_pixels is not decoded
  // (an undecodable image). The training shuffle buffer never holds more records than the files
  // do (it is bounded by their count, found by following their framing up to the buffer's size)
  // and grows as it fills; one whose estimated memory (that bound x the mean record size of the
  // first file) exceeds memory_limit_bytes is refused (0 = no check).
  int64_t num_classes = 0;
  int64_t max_image_pixels = kDefaultMaxImagePixels;
  uint64_t memory_limit_bytes = 0;
};

// One batch. Rows whose label is -1 are padding (eval's last batch) or images that could not be
// decoded in eval; they must be masked out of metrics. `valid` counts the other rows.
struct Batch {
  int64_t size = 0;
  int64_t valid = 0;
  int height = 0, width = 0;
  std::vector<float> images;    // [size, height, width, 3]
  std::vector<int32_t> labels;  // [size]
};

// Anything that hands out batches: the real pipeline or fake data.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next batch; nullptr at the end of an eval epoch. A returned batch stays valid for as long
  // as the caller holds it and goes back to the source's pool when released.
  virtual Result<std::shared_ptr<const Batch>> next() = 0;
};

class InputPipeline final : public BatchSource {
 public:
  struct Stats {
    int64_t records = 0;  // records read
    int64_t inputs = 0;   // records + those with bad framing/CRC
    // Bad framing/CRC (the records the damaged bytes held, estimated where the framing was
    // lost) or an unparsable tf.Example.
    int64_t corrupt_records_skipped = 0;
    int64_t undecodable_images_skipped = 0;         // image bytes that did not decode
    std::vector<std::string> undecodable_examples;  // "file: image/filename (why)", first few
    // Damaged framing or CRCs that reading went past (RecordStream::damage_notes), the bytes
    // skipped over them, and the first few named by file and byte offset.
    int64_t damaged_places = 0;
    uint64_t damaged_bytes_skipped = 0;
    std::vector<std::string> damage_notes;
  };

  // Finds the files and starts the threads. Errors: no matching files, bad options.
  // Training may resume at `resume` (a position() of an earlier pipeline): the files are
  // re-opened at their offsets and the buffered records re-read. A position of a different
  // stream (another seed, interleave, shuffle buffer, batch size or file list) is an error, or,
  // when `fresh_notice` is given, gives a fresh stream and a notice there saying why. A position
  // whose offsets do not fit its files (changed or damaged) is always an error naming the file.
  static Result<std::unique_ptr<InputPipeline>> create(const InputOptions& options,
                                                       const InputPosition* resume = nullptr,
                                                       std::string* fresh_notice = nullptr);
  // Stops every thread, even mid-epoch, and waits for them.
  ~InputPipeline() override;

  Result<std::shared_ptr<const Batch>> next() override;
  Stats stats() const;
  const std::vector<std::string>& files() const;  // this shard's files, sorted
  // Training: where the record stream stands after the last batch next() returned (taken when
  // that batch's last record left the shuffle buffer; the reader threads run ahead of it).
  InputPosition position() const;

  struct State;  // shared with the threads

 private:
  explicit InputPipeline(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// The sorted `train-*` or `validation-*` (eval_prefix*) files of data_dir, then every num_shards-th
// from shard_index. Evaluation with fewer files than shards: shard 0 gets them all, the others
// none. Error when data_dir has no such file, or a training shard gets none.
// `reads_every_file` (optional) says whether this shard got every file.
Result<std::vector<std::string>> list_input_files(const std::string& data_dir, bool training,
                                                  int shard_index, int num_shards,
                                                  bool* reads_every_file = nullptr,
                                                  const std::string& eval_prefix = "validation-");

}  // namespace ic
