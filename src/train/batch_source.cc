#include "train/batch_source.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include "core/host_memory.h"
#include "data/fake_input.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

// --use_data=fake: data/fake_input.h's fixed random batch (labels in [0, 999)), with the
// labels folded into range when --num_classes is smaller (tests train tiny heads), and, for
// evaluation, a pass of eval_total_size / eval_batch_size batches (50000 images' worth when
// eval_total_size is 0, as the reference counts).
class FakeRun final : public BatchSource {
 public:
  FakeRun(const RunOptions& options, bool training, int64_t batch_size) : training_(training) {
    FakeInputOptions fake;
    fake.batch_size = batch_size;
    fake.height = options.height;
    fake.width = options.width;
    fake.seed = static_cast<uint64_t>(options.seed);
    FakeInput input(fake);
    std::shared_ptr<const Batch> batch = input.next().value();
    if (options.num_classes < 999) {
      auto folded = std::make_shared<Batch>(*batch);
      for (int32_t& label : folded->labels) label %= options.num_classes;
      batch = std::move(folded);
    }
    batch_ = std::move(batch);
    eval_batches_ = eval_batch_count(options).value_or(1);
  }

  Result<std::shared_ptr<const Batch>> next() override {
    if (!training_ && produced_ >= eval_batches_) return std::shared_ptr<const Batch>();
    ++produced_;
    return batch_;
  }

 private:
  bool training_;
  std::shared_ptr<const Batch> batch_;
  int64_t eval_batches_ = 0, produced_ = 0;
};

}  // namespace

Result<std::unique_ptr<BatchSource>> make_batch_source(const RunOptions& options, bool training,
                                                       int64_t batch_size, int replica,
                                                       int replicas, const std::string* resume,
                                                       const std::string& where,
                                                       std::string* notice) {
  if (options.use_data == UseData::fake) {
    return std::unique_ptr<BatchSource>(new FakeRun(options, training, batch_size));
  }
  InputOptions in;
  in.data_dir = options.data_dir;
  in.training = training;
  in.batch_size = batch_size;
  in.height = options.height;
  in.width = options.width;
  in.preprocessing = options.preprocessing;
  in.use_annotated_bbox = options.use_annotated_bbox;
  in.crop.min_area = static_cast<float>(options.min_crop_area);
  in.cb_range = static_cast<float>(options.cb_distortion_range);
  in.cr_range = static_cast<float>(options.cr_distortion_range);
  in.fast_color_distort = options.use_fast_color_distort;
  in.num_classes = options.num_classes;
  in.max_image_pixels = options.max_image_pixels;
  in.memory_limit_bytes = physical_memory_bytes();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  in.num_threads = std::min(options.num_parallel_calls, cores);
  in.seed = static_cast<uint64_t>(options.seed) + static_cast<uint64_t>(replica) * 1000003u;
  in.shard_index = replica;
  in.num_shards = replicas;
  in.num_files_infeed = options.num_files_infeed;
  in.shuffle_buffer = options.followup_shuffle_buffer_size;
  // Both read past damaged records: training counts them against --max_bad_input_fraction;
  // evaluation names them all and then refuses the score unless told to skip them
  // (check_eval_input_whole).
  in.skip_corrupt_records = true;
  if (!training && options.eval_total_size > 0) {
    // The reference evaluates eval_steps = eval_total_size // eval_batch_size full batches,
    // shared by the replicas that read validation files (data/input_pipeline.h).
    in.max_eval_images = (options.eval_total_size / options.eval_batch_size) *
                         static_cast<int64_t>(options.eval_batch_size);
  }
  std::optional<InputPosition> position;
  if (resume != nullptr && training) {
    IC_ASSIGN_OR_RETURN(position, parse_input_position(*resume, where));
  }
  Result<std::unique_ptr<InputPipeline>> created =
      InputPipeline::create(in, position ? &*position : nullptr, notice);
  if (!created.ok() && position) {
    return error(where,
                 ": cannot resume the input stream where it stopped: ", created.status().message());
  }
  IC_ASSIGN_OR_RETURN(std::unique_ptr<InputPipeline> pipeline, std::move(created));
  return std::unique_ptr<BatchSource>(std::move(pipeline));
}

std::optional<int64_t> eval_batch_count(const RunOptions& options) {
  if (options.use_data == UseData::fake) {
    const int64_t images = options.eval_total_size > 0 ? options.eval_total_size : 50000;
    return std::max<int64_t>(1, images / options.eval_batch_size);
  }
  if (options.eval_total_size > 0) return options.eval_total_size / options.eval_batch_size;
  return std::nullopt;
}

std::string input_summary(const BatchSource& source) {
  const auto* pipeline = dynamic_cast<const InputPipeline*>(&source);
  if (pipeline == nullptr) return "";
  const InputPipeline::Stats stats = pipeline->stats();
  if (stats.corrupt_records_skipped == 0 && stats.undecodable_images_skipped == 0) return "";
  std::ostringstream out;
  out << "input: skipped " << stats.corrupt_records_skipped << " corrupt records and "
      << stats.undecodable_images_skipped << " undecodable images";
  if (stats.damaged_places > 0) {
    out << "; " << stats.damaged_places << " damaged places in the files, "
        << stats.damaged_bytes_skipped << " bytes skipped";
  }
  for (const std::string& note : stats.damage_notes) out << "\n  " << note;
  if (static_cast<size_t>(stats.damaged_places) > stats.damage_notes.size()) {
    out << "\n  (" << stats.damaged_places - static_cast<int64_t>(stats.damage_notes.size())
        << " more damaged places not listed)";
  }
  for (const std::string& example : stats.undecodable_examples) out << "\n  " << example;
  return out.str();
}

bool eval_input_damaged(const BatchSource& source) {
  return input_stats(source).damaged_places > 0;
}

Status check_eval_input_whole(const RunOptions& options, const BatchSource& source,
                              bool any_damaged) {
  if (!any_damaged || options.eval_skip_corrupt) return Status();
  const InputPipeline::Stats stats = input_stats(source);
  if (stats.damaged_places == 0) {
    return data_loss(
        "another replica's validation files have damaged records; no score is "
        "reported (--eval_skip_corrupt=true scores the rest)");
  }
  std::ostringstream out;
  out << "the validation files have " << stats.damaged_places << " damaged places (about "
      << stats.inputs - stats.records
      << " records lost); no score is reported, since a score over the rest would read as one "
         "over the whole set (--eval_skip_corrupt=true scores the rest):";
  for (const std::string& note : stats.damage_notes) out << "\n  " << note;
  return data_loss(out.str());
}

std::string eval_input_summary(const RunOptions& options, const BatchSource& source) {
  const auto* pipeline = dynamic_cast<const InputPipeline*>(&source);
  if (pipeline == nullptr) return "";
  const InputPipeline::Stats stats = pipeline->stats();
  // Records lost to framing or CRC damage are the inputs that never became records; the rest of
  // corrupt_records_skipped did not parse as tf.Examples.
  const int64_t lost = stats.inputs - stats.records;
  const int64_t unparsable = stats.corrupt_records_skipped - lost;
  const int64_t evaluated = stats.records - unparsable - stats.undecodable_images_skipped;
  int64_t held = 0, in_damage = 0, regions = 0;
  uint64_t uncounted_bytes = 0;
  std::string count_failure;
  for (const std::string& file : pipeline->files()) {
    Result<TfRecordCount> count = count_tfrecords(file);
    if (!count.ok()) {
      count_failure = count.status().message();
      break;
    }
    held += count->records;
    regions += count->damaged_regions;
    uncounted_bytes += count->uncounted_bytes;
    // The records a damaged stretch held: its bytes over the file's mean record size, at least
    // one per stretch.
    if (count->damaged_regions == 0) continue;
    const double mean = count->records > 0 ? static_cast<double>(count->counted_bytes) /
                                                 static_cast<double>(count->records)
                                           : 0.0;
    const int64_t estimate =
        mean > 0 ? std::llround(static_cast<double>(count->uncounted_bytes) / mean) : 0;
    in_damage += std::max(count->damaged_regions, estimate);
  }
  std::ostringstream out;
  out << "evaluation input: evaluated " << evaluated << " of the ";
  if (count_failure.empty()) {
    out << held + in_damage << " records the " << pipeline->files().size()
        << " validation files hold";
    if (regions > 0) {
      out << " (about " << in_damage << " of them in " << regions << " damaged stretches, "
          << uncounted_bytes << " bytes, whose framing could not be followed)";
    }
  } else {
    out << "records of the " << pipeline->files().size()
        << " validation files (they could not be counted: " << count_failure << ")";
  }
  if (options.eval_total_size > 0) out << "; --eval_total_size ends the pass early";
  const std::string details = input_summary(source);
  if (!details.empty()) out << "\n" << details;
  return out.str();
}

std::optional<std::string> input_position_text(const BatchSource& source) {
  const auto* pipeline = dynamic_cast<const InputPipeline*>(&source);
  if (pipeline == nullptr) return std::nullopt;
  return format_input_position(pipeline->position());
}

InputPipeline::Stats input_stats(const BatchSource& source) {
  const auto* pipeline = dynamic_cast<const InputPipeline*>(&source);
  return pipeline == nullptr ? InputPipeline::Stats() : pipeline->stats();
}

BadInputCount bad_inputs_between(const InputPipeline::Stats& before,
                                 const InputPipeline::Stats& after) {
  const auto bad = [](const InputPipeline::Stats& s) {
    return s.corrupt_records_skipped + s.undecodable_images_skipped;
  };
  return BadInputCount{bad(after) - bad(before), after.inputs - before.inputs};
}

}  // namespace ic
