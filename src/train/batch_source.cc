#include "train/batch_source.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "core/host_memory.h"
#include "data/fake_input.h"

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
  for (const std::string& example : stats.undecodable_examples) out << "\n  " << example;
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
