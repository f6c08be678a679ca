#include "data/input_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "data/example.h"
#include "data/record_stream.h"
#include "io/file_system.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

constexpr size_t kMaxUndecodableExamples = 20;
constexpr uint64_t kRecordStream = 0x7265636F;  // "reco"

// The stream's state after some record (the rest of an InputPosition is the pipeline's
// identity, the same for every batch).
struct StreamSnapshot {
  uint64_t stream_index = 0;
  RecordStreamPosition stream;
};

// A batch being filled: rows are handed to workers as records arrive; it is complete when the
// reader has sealed it and every row is done.
struct InFlight {
  std::unique_ptr<Batch> batch;
  int64_t remaining = 0;    // rows not yet written
  bool sealed = false;      // the reader has assigned every row
  std::vector<uint8_t> ok;  // per row: 1 = a decoded record, 0 = padding or a failure
  // Training: the stream's position once this batch's last record was taken from it.
  std::shared_ptr<const StreamSnapshot> position_after;
  bool complete() const { return sealed && remaining == 0; }
};

struct WorkItem {
  std::string record;
  std::string source;
  uint64_t offset = 0;  // of the record in `source`
  uint64_t stream_index = 0;
  std::shared_ptr<InFlight> target;
  int64_t row = 0;
};

}  // namespace

struct InputPipeline::State {
  InputOptions options;
  PreprocessOptions preprocess;
  std::vector<std::string> files;
  bool reads_every_file = false;  // this shard reads every file (evaluation limits its share)
  uint64_t seed = 0;

  mutable std::mutex mu;
  std::condition_variable cv;  // every state change below notifies all waiters
  bool stop = false;
  bool reader_done = false;  // no more work items or batches will come
  Status error;              // from the reader; reported once the good batches are out
  Status fatal;              // from a worker (a label out of range); reported at once
  std::vector<std::unique_ptr<Batch>> free_batches;
  std::deque<std::shared_ptr<InFlight>> pending;  // in stream order
  std::deque<WorkItem> work;
  size_t work_capacity = 0;
  Stats stats;  // corrupt count: unparsable tf.Examples only; no damage counts
  // Bad framing or CRC, counted by the reader's stream: copied under `mu` as it reads.
  int64_t stream_corrupt_records = 0;
  int64_t stream_damaged_places = 0;
  uint64_t stream_bytes_skipped = 0;
  std::vector<std::string> stream_damage_notes;

  std::unique_ptr<RecordStream> stream;  // the reader's; made (and restored) by create()
  uint64_t first_stream_index = 0;       // where the reader's count starts (a resume's)
  InputPosition identity;                // the fields that say which stream this is
  std::shared_ptr<const StreamSnapshot> consumed_position;  // after the last batch next() gave

  std::thread reader;
  std::vector<std::thread> workers;

  size_t image_floats() const { return static_cast<size_t>(options.height) * options.width * 3; }
  void run_reader();
  void copy_stream_counts();  // with `mu` held
  void run_worker();
  bool process(const WorkItem& item, PreprocessScratch* scratch, int32_t* label);
};

Result<std::vector<std::string>> list_input_files(const std::string& data_dir, bool training,
                                                  int shard_index, int num_shards,
                                                  bool* reads_every_file,
                                                  const std::string& eval_prefix) {
  if (reads_every_file != nullptr) *reads_every_file = num_shards == 1;
  if (num_shards < 1 || shard_index < 0 || shard_index >= num_shards) {
    return error("shard ", shard_index, " of ", num_shards, " is not a valid input shard");
  }
  const std::string prefix = training ? "train-" : eval_prefix;
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(data_dir));
  Result<std::vector<DirEntry>> entries = fs->list(data_dir);
  if (!entries.ok()) return entries.status().with_context("cannot list --data_dir " + data_dir);
  std::vector<std::string> all;
  for (const DirEntry& entry : *entries) {
    if (entry.name.rfind(prefix, 0) != 0) continue;
    const std::string path = join_path(data_dir, entry.name);
    if (!entry.problem.empty()) {
      return error(path, ": cannot read this input file: ", entry.problem);
    }
    if (!entry.is_regular_file) {
      return error(path,
                   ": is not a regular file (a directory?); input files must be TFRecord files");
    }
    all.push_back(path);
  }
  std::sort(all.begin(), all.end());
  if (!training && !all.empty() && all.size() < static_cast<size_t>(num_shards)) {
    // Fewer validation files than shards: shard 0 reads them all and the others none, so that
    // the shards together still see every image once (an empty shard ends at once).
    if (reads_every_file != nullptr) *reads_every_file = shard_index == 0;
    return shard_index == 0 ? all : std::vector<std::string>();
  }
  std::vector<std::string> mine;
  for (size_t i = static_cast<size_t>(shard_index); i < all.size(); i += num_shards) {
    mine.push_back(all[i]);
  }
  if (mine.empty()) {
    return error("no ", prefix, "* files for input shard ", shard_index, " of ", num_shards, " in ",
                 data_dir, " (", all.size(), " found in all)");
  }
  return mine;
}

namespace {

// The most records the shuffle buffer can hold: the flag's size, or the records of the files
// when they hold fewer (a buffer larger than the data would otherwise fill with the next
// epochs' copies). The framing is followed only until the buffer's size is reached.
Result<int> shuffle_buffer_capacity(const std::vector<std::string>& files, int shuffle_buffer) {
  int64_t records = 0;
  for (const std::string& file : files) {
    if (records >= shuffle_buffer) break;
    IC_ASSIGN_OR_RETURN(const TfRecordCount count, count_tfrecords(file, shuffle_buffer - records));
    records += count.records;
  }
  return static_cast<int>(std::min<int64_t>(records, shuffle_buffer));
}

// The shuffle buffer holds whole records: refuse a size whose memory is clearly beyond the
// limit, estimated from the mean size of (up to) the first 64 records of one file.
Status check_shuffle_buffer_memory(const InputOptions& options, int capacity,
                                   const std::string& sample_file) {
  if (options.memory_limit_bytes == 0 || capacity <= 1) return Status();
  constexpr int kSampleRecords = 64;
  // Per buffered record beyond its bytes: two std::strings and the source path.
  const double overhead = 2 * sizeof(std::string) + sizeof(uint64_t) + sample_file.size();
  double record_bytes = 0;
  int sampled = 0;
  Result<TfRecordReader> reader = TfRecordReader::open(sample_file);
  std::string record;
  while (reader.ok() && sampled < kSampleRecords) {
    Result<bool> got = reader->read(&record);
    if (!got.ok() || !*got) break;
    record_bytes += static_cast<double>(record.size());
    ++sampled;
  }
  const double per_record = overhead + (sampled > 0 ? record_bytes / sampled : 0.0);
  const double need = per_record * capacity;
  if (need > static_cast<double>(options.memory_limit_bytes)) {
    const std::string bound =
        capacity < options.shuffle_buffer
            ? " (bounded by the " + std::to_string(capacity) + " records the input files hold)"
            : "";
    return error("a shuffle buffer of ", options.shuffle_buffer, " records", bound, " needs about ",
                 need / 1e9, " GB (", static_cast<int64_t>(per_record), " bytes per record, from ",
                 sampled, " records of ", sample_file, "), more than this machine's ",
                 static_cast<double>(options.memory_limit_bytes) / 1e9,
                 " GB of memory (--followup_shuffle_buffer_size)");
  }
  return Status();
}

}  // namespace

namespace {

// Why `resume` is not a position of the stream `identity` describes; empty when it is.
std::string position_mismatch(const InputPosition& resume, const InputPosition& identity) {
  std::ostringstream why;
  if (resume.seed != identity.seed) why << "another seed; ";
  if (resume.cycle_length != identity.cycle_length) {
    why << "--num_files_infeed " << resume.cycle_length << " then, " << identity.cycle_length
        << " now; ";
  }
  if (resume.shuffle_buffer != identity.shuffle_buffer) {
    why << "shuffle buffer " << resume.shuffle_buffer << " then, " << identity.shuffle_buffer
        << " now; ";
  }
  if (resume.batch_size != identity.batch_size) {
    why << "batch size " << resume.batch_size << " then, " << identity.batch_size << " now; ";
  }
  if (resume.file_names != identity.file_names) {
    why << resume.file_names.size() << " input files then, " << identity.file_names.size()
        << " now (or other names); ";
  }
  std::string text = why.str();
  if (text.size() >= 2) text.resize(text.size() - 2);
  return text;
}

}  // namespace

Result<std::unique_ptr<InputPipeline>> InputPipeline::create(const InputOptions& options,
                                                             const InputPosition* resume,
                                                             std::string* fresh_notice) {
  if (options.batch_size < 1) return error("batch size must be positive, got ", options.batch_size);
  if (options.height < 1 || options.width < 1) {
    return error("image size must be positive, got ", options.height, "x", options.width);
  }
  if (options.num_threads < 1) return error("num_threads must be >= 1, got ", options.num_threads);
  bool reads_every_file = false;
  IC_ASSIGN_OR_RETURN(
      std::vector<std::string> files,
      list_input_files(options.data_dir, options.training, options.shard_index, options.num_shards,
                       &reads_every_file, options.eval_file_prefix));
  int shuffle_capacity = 0;
  if (options.training && options.shuffle_buffer > 1) {
    IC_ASSIGN_OR_RETURN(shuffle_capacity, shuffle_buffer_capacity(files, options.shuffle_buffer));
    IC_RETURN_IF_ERROR(check_shuffle_buffer_memory(options, shuffle_capacity, files.front()));
  }
  auto state = std::make_shared<State>();
  state->options = options;
  state->files = std::move(files);
  state->reads_every_file = reads_every_file;
  PreprocessOptions& pre = state->preprocess;
  pre.kind = options.preprocessing;
  pre.training = options.training;
  pre.height = options.height;
  pre.width = options.width;
  pre.vgg_resize_side_min = options.vgg_resize_side_min;
  pre.vgg_resize_side_max = options.vgg_resize_side_max;
  pre.box = options.crop;
  pre.cb_range = options.cb_range;
  pre.cr_range = options.cr_range;
  pre.fast_color_distort = options.fast_color_distort;
  pre.max_pixels = options.max_image_pixels;
  uint64_t seed = options.seed;
  if (!options.deterministic)
    seed ^= (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  // Each data-parallel shard gets its own streams of random numbers.
  state->seed = mix64(seed ^ mix64(static_cast<uint64_t>(options.shard_index) + 1));
  RecordStreamOptions stream_options;
  stream_options.repeat_and_shuffle_files = options.training;
  stream_options.cycle_length = std::max(options.num_files_infeed, 1);
  stream_options.shuffle_buffer = shuffle_capacity;
  stream_options.skip_corrupt_records = options.skip_corrupt_records;
  stream_options.seed = state->seed;
  state->stream = std::make_unique<RecordStream>(state->files, stream_options);
  InputPosition& identity = state->identity;
  identity.seed = state->seed;
  identity.cycle_length = stream_options.cycle_length;
  identity.shuffle_buffer = options.training ? options.shuffle_buffer : 0;  // the flag's
  identity.batch_size = options.batch_size;
  for (const std::string& file : state->files) {
    identity.file_names.push_back(base_name(file));
  }
  if (resume != nullptr && !options.training) {
    return error("an input position resumes a training stream, not evaluation");
  }
  const std::string mismatch = resume ? position_mismatch(*resume, identity) : "";
  if (!mismatch.empty()) {
    if (fresh_notice == nullptr) {
      return error("the saved input position is of another input stream (", mismatch, ")");
    }
    *fresh_notice = "The input stream starts afresh, not where the checkpoint's stopped (" +
                    mismatch + "): the run is not bit-identical to one run straight through";
    resume = nullptr;
  }
  if (resume != nullptr) {
    IC_RETURN_IF_ERROR(state->stream->restore(resume->stream));
    state->first_stream_index = resume->stream_index;
  }
  {
    auto start = std::make_shared<StreamSnapshot>();
    start->stream_index = state->first_stream_index;
    start->stream = state->stream->position();
    state->consumed_position = std::move(start);
  }
  const int pool_size = std::max(options.prefetch_batches, 1) + 2;
  for (int i = 0; i < pool_size; ++i) {
    auto batch = std::make_unique<Batch>();
    batch->size = options.batch_size;
    batch->height = options.height;
    batch->width = options.width;
    batch->images.resize(static_cast<size_t>(options.batch_size) * state->image_floats());
    batch->labels.resize(static_cast<size_t>(options.batch_size));
    state->free_batches.push_back(std::move(batch));
  }
  state->work_capacity = static_cast<size_t>(options.num_threads) * 4;
  state->reader = std::thread([s = state.get()] { s->run_reader(); });
  for (int i = 0; i < options.num_threads; ++i) {
    state->workers.emplace_back([s = state.get()] { s->run_worker(); });
  }
  return std::unique_ptr<InputPipeline>(new InputPipeline(std::move(state)));
}

InputPipeline::InputPipeline(std::shared_ptr<State> state) : state_(std::move(state)) {}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  state_->reader.join();
  for (std::thread& worker : state_->workers) worker.join();
}

void InputPipeline::State::run_reader() {
  RecordStream& stream = *this->stream;
  const int64_t limit = options.training   ? 0
                        : reads_every_file ? options.max_eval_images
                                           : options.max_eval_images / options.num_shards;
  uint64_t stream_index = first_stream_index;
  Status failure;
  bool end = false;
  while (!end) {
    std::shared_ptr<InFlight> flight = std::make_shared<InFlight>();
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop || !free_batches.empty(); });
      if (stop) break;
      flight->batch = std::move(free_batches.back());
      free_batches.pop_back();
      flight->remaining = options.batch_size;
      flight->ok.assign(static_cast<size_t>(options.batch_size), 0);
      pending.push_back(flight);
    }
    int64_t row = 0;
    for (; row < options.batch_size; ++row) {
      WorkItem item;
      Result<bool> got = (limit > 0 && static_cast<int64_t>(stream_index) >= limit)
                             ? Result<bool>(false)
                             : stream.next(&item.record, &item.source, &item.offset);
      if (!got.ok() || !*got) {
        if (!got.ok()) failure = got.status();
        end = true;
        break;
      }
      item.stream_index = stream_index++;
      item.target = flight;
      item.row = row;
      std::unique_lock<std::mutex> lock(mu);
      ++stats.records;
      copy_stream_counts();
      cv.wait(lock, [&] { return stop || work.size() < work_capacity; });
      if (stop) return;
      work.push_back(std::move(item));
      cv.notify_all();
    }
    if (options.training && row == options.batch_size) {
      auto after = std::make_shared<StreamSnapshot>();
      after->stream_index = stream_index;
      after->stream = stream.position();
      std::lock_guard<std::mutex> lock(mu);
      flight->position_after = std::move(after);
    }
    // Padding for the rest of a last partial batch: zero images labelled -1.
    Batch& batch = *flight->batch;
    const size_t image_floats_count = image_floats();
    std::fill(batch.images.begin() + static_cast<std::ptrdiff_t>(row * image_floats_count),
              batch.images.end(), 0.0f);
    std::fill(batch.labels.begin() + row, batch.labels.end(), -1);
    std::lock_guard<std::mutex> lock(mu);
    flight->remaining -= options.batch_size - row;
    flight->sealed = true;
    if (row == 0) {  // nothing was read into it: not a batch
      pending.pop_back();
      free_batches.push_back(std::move(flight->batch));
    }
    cv.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu);
  copy_stream_counts();
  if (!failure.ok()) error = failure;
  reader_done = true;
  cv.notify_all();
}

void InputPipeline::State::copy_stream_counts() {
  stream_corrupt_records = stream->corrupt_records();
  stream_bytes_skipped = stream->bytes_skipped();
  if (stream_damaged_places == stream->damage_count()) return;
  stream_damaged_places = stream->damage_count();
  stream_damage_notes = stream->damage_notes();
}

// Parses, decodes and preprocesses one record into its row. False when the record is corrupt or
// its image does not decode (counted and named in the stats).
bool InputPipeline::State::process(const WorkItem& item, PreprocessScratch* scratch,
                                   int32_t* label) {
  Result<ImageExample> example = decode_image_example(item.record);
  if (!example.ok()) {
    std::lock_guard<std::mutex> lock(mu);
    ++stats.corrupt_records_skipped;
    return false;
  }
  std::vector<BoundingBox> boxes;
  if (options.use_annotated_bbox && options.training) {
    const size_t count = std::min({example->bbox_ymin.size(), example->bbox_xmin.size(),
                                   example->bbox_ymax.size(), example->bbox_xmax.size()});
    for (size_t i = 0; i < count; ++i) {
      boxes.push_back(BoundingBox{example->bbox_ymin[i], example->bbox_xmin[i],
                                  example->bbox_ymax[i], example->bbox_xmax[i]});
    }
  }
  Rng rng(mix64(seed ^ kRecordStream), item.stream_index);
  float* out = item.target->batch->images.data() + static_cast<size_t>(item.row) * image_floats();
  const Status status = preprocess_image(example->encoded, boxes, preprocess, rng, scratch, out);
  if (!status.ok()) {
    std::lock_guard<std::mutex> lock(mu);
    ++stats.undecodable_images_skipped;
    if (stats.undecodable_examples.size() < kMaxUndecodableExamples) {
      stats.undecodable_examples.push_back(
          item.source + ": " + (example->filename.empty() ? "record" : example->filename) + " (" +
          status.message() + ")");
    }
    return false;
  }
  if (options.num_classes > 0 && (example->label < 0 || example->label >= options.num_classes)) {
    std::lock_guard<std::mutex> lock(mu);
    if (fatal.ok()) {
      fatal = ic::error(item.source, ": record at byte ", item.offset,
                        example->filename.empty() ? "" : " (" + example->filename + ")", ": label ",
                        example->label, " is outside [0, ", options.num_classes,
                        ") for --num_classes=", options.num_classes,
                        example->label == -1 ? " (-1: the record has no image/class/label)" : "");
      cv.notify_all();
    }
    return false;
  }
  *label = static_cast<int32_t>(example->label);
  return true;
}

void InputPipeline::State::run_worker() {
  PreprocessScratch scratch;
  while (true) {
    WorkItem item;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop || !work.empty() || reader_done; });
      if (stop || work.empty()) return;
      item = std::move(work.front());
      work.pop_front();
      cv.notify_all();  // room in the work queue for the reader
    }
    int32_t label = -1;
    const bool ok = process(item, &scratch, &label);
    std::lock_guard<std::mutex> lock(mu);
    InFlight& flight = *item.target;
    flight.batch->labels[static_cast<size_t>(item.row)] = ok ? label : -1;
    flight.ok[static_cast<size_t>(item.row)] = ok ? 1 : 0;
    --flight.remaining;
    if (flight.complete()) cv.notify_all();
  }
}

Result<std::shared_ptr<const Batch>> InputPipeline::next() {
  State& s = *state_;
  std::shared_ptr<InFlight> flight;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait(lock, [&] {
      return !s.fatal.ok() || (!s.pending.empty() && s.pending.front()->complete()) ||
             (s.pending.empty() && s.reader_done);
    });
    if (!s.fatal.ok()) return s.fatal;
    if (s.pending.empty()) {
      if (!s.error.ok()) return s.error;
      return std::shared_ptr<const Batch>();  // end of the eval epoch
    }
    flight = std::move(s.pending.front());
    s.pending.pop_front();
    if (flight->position_after) s.consumed_position = flight->position_after;
  }
  std::unique_ptr<Batch> batch = std::move(flight->batch);
  const size_t image_floats = s.image_floats();
  int64_t valid = 0;
  for (uint8_t ok : flight->ok) valid += ok;
  if (s.options.training && valid < batch->size) {
    // Training batches are always full: a row whose image failed takes a copy of a good row.
    if (valid == 0) {
      std::lock_guard<std::mutex> lock(s.mu);
      s.free_batches.push_back(std::move(batch));
      s.cv.notify_all();
      return error("no image of a training batch could be decoded (see the skipped-image count)");
    }
    int64_t good = 0;
    for (int64_t row = 0; row < batch->size; ++row) {
      if (flight->ok[static_cast<size_t>(row)]) continue;
      while (!flight->ok[static_cast<size_t>(good)]) ++good;
      std::memcpy(batch->images.data() + row * image_floats,
                  batch->images.data() + good * image_floats, image_floats * sizeof(float));
      batch->labels[static_cast<size_t>(row)] = batch->labels[static_cast<size_t>(good)];
    }
    valid = batch->size;
  }
  batch->valid = valid;
  std::shared_ptr<State> owner = state_;
  return std::shared_ptr<const Batch>(batch.release(), [owner](const Batch* returned) {
    std::lock_guard<std::mutex> lock(owner->mu);
    owner->free_batches.emplace_back(const_cast<Batch*>(returned));
    owner->cv.notify_all();
  });
}

InputPipeline::Stats InputPipeline::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  Stats stats = state_->stats;
  stats.corrupt_records_skipped += state_->stream_corrupt_records;
  stats.damaged_places = state_->stream_damaged_places;
  stats.damaged_bytes_skipped = state_->stream_bytes_skipped;
  stats.damage_notes = state_->stream_damage_notes;
  stats.inputs = stats.records + state_->stream_corrupt_records;
  return stats;
}

const std::vector<std::string>& InputPipeline::files() const { return state_->files; }

InputPosition InputPipeline::position() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  InputPosition position = state_->identity;
  position.stream_index = state_->consumed_position->stream_index;
  position.stream = state_->consumed_position->stream;
  return position;
}

}  // namespace ic
