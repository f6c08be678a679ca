#include "train/run_options.h"

#include "train/flag_table.h"

namespace ic {

Status validate_run_options(const RunOptions& o) {
  IC_RETURN_IF_ERROR(trainer_flag_table().validate(o));
  if (o.mode == Mode::summary) return Status();
  if (o.use_data == UseData::real && o.data_dir.empty()) {
    return error("--data_dir is required with --use_data=real (or use --use_data=fake)");
  }
  if (o.model_dir.empty()) {
    return error("--model_dir is required with --mode=", choice_name(o.mode),
                 " (checkpoints and event files go there)");
  }
  if (o.export_best != ExportBestMetric::none) {
    if (o.export_dir.empty())
      return invalid_argument("--export_best=", choice_name(o.export_best),
                              " needs --export_dir, where the best checkpoints are exported");
    if (o.mode == Mode::train)
      return invalid_argument(
          "--export_best needs evaluations to compare: use it with "
          "--mode=train_and_eval or --mode=eval, not --mode=train");
  }
  return Status();
}

Status check_memory_fits(const RunOptions& o, uint64_t physical_bytes) {
  if (physical_bytes == 0 || o.mode == Mode::summary) return Status();
  constexpr uint64_t kPipelineBatches = 4;  // data/input_pipeline.cc: prefetch 2 + 2
  // long double: no product of int32 flags can overflow it.
  const long double image_bytes =
      static_cast<long double>(o.height) * static_cast<long double>(o.width) * 3 * sizeof(float);
  const struct {
    const char* flag;
    int64_t count;
  } batches[] = {{"train_batch_size", o.train_batch_size}, {"eval_batch_size", o.eval_batch_size}};
  for (const auto& batch : batches) {
    const long double need = static_cast<long double>(batch.count) * image_bytes * kPipelineBatches;
    if (need > static_cast<long double>(physical_bytes)) {
      // The flags ask for more than this machine has: a bad command line, refused before
      // anything runs (not resource_exhausted, which is a limit met while running).
      return invalid_argument("--", batch.flag, "=", batch.count, " needs at least ",
                              static_cast<double>(need) / 1e9, " GB for its input batches alone (",
                              kPipelineBatches, " batches x ", batch.count, " images x ",
                              static_cast<double>(image_bytes), " bytes of ", o.height, "x",
                              o.width, "x3 floats), more than this machine's ",
                              static_cast<double>(physical_bytes) / 1e9, " GB of memory");
    }
  }
  return Status();
}

}  // namespace ic
