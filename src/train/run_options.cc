#include "train/run_options.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

namespace ic {
namespace {

Status one_of(const char* flag, const std::string& value,
              std::initializer_list<const char*> allowed) {
  for (const char* a : allowed) {
    if (value == a) return Status();
  }
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  return error("bad value '", value, "' for --", flag, " (allowed: ", list, ")");
}

template <typename T>
Status at_least(const char* flag, T value, T minimum) {
  if (value >= minimum) return Status();
  return error("bad value ", value, " for --", flag, " (allowed: ", minimum, " or more)");
}

Status valid_device(const std::string& device) {
  if (device.empty() || device == "cpu" || device == "cuda") return Status();
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
      std::all_of(device.begin() + 5, device.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status();
  }
  return error("bad value '", device, "' for --device (allowed: cpu, cuda, cuda:N, or empty)");
}

}  // namespace

Status validate_run_options(const RunOptions& o) {
  IC_RETURN_IF_ERROR(one_of("mode", o.mode, {"train", "eval", "train_and_eval", "summary"}));
  IC_RETURN_IF_ERROR(one_of("use_data", o.use_data, {"real", "fake"}));
  IC_RETURN_IF_ERROR(one_of("optimizer", o.optimizer, {"sgd", "momentum", "RMS"}));
  IC_RETURN_IF_ERROR(one_of("precision", o.precision, {"float32", "bfloat16"}));
  IC_RETURN_IF_ERROR(one_of("preprocessing", o.preprocessing, {"inception", "vgg"}));
  IC_RETURN_IF_ERROR(one_of("checkpoint_format", o.checkpoint_format, {"tf", "safetensors"}));
  IC_RETURN_IF_ERROR(valid_device(o.device));
  IC_RETURN_IF_ERROR(at_least("iterations", o.iterations, 1));
  IC_RETURN_IF_ERROR(at_least("train_batch_size", o.train_batch_size, 1));
  IC_RETURN_IF_ERROR(at_least("eval_batch_size", o.eval_batch_size, 1));
  IC_RETURN_IF_ERROR(at_least("eval_total_size", o.eval_total_size, 0));
  IC_RETURN_IF_ERROR(at_least("train_steps", o.train_steps, 0));
  IC_RETURN_IF_ERROR(at_least("train_steps_per_eval", o.train_steps_per_eval, 1));
  IC_RETURN_IF_ERROR(at_least("num_classes", o.num_classes, 2));
  IC_RETURN_IF_ERROR(at_least("width", o.width, 1));
  IC_RETURN_IF_ERROR(at_least("height", o.height, 1));
  IC_RETURN_IF_ERROR(at_least("save_summary_steps", o.save_summary_steps, 0));
  IC_RETURN_IF_ERROR(at_least("save_checkpoints_secs", o.save_checkpoints_secs, 0));
  IC_RETURN_IF_ERROR(at_least("learning_rate_decay_epochs", o.learning_rate_decay_epochs, 1));
  IC_RETURN_IF_ERROR(at_least("cold_epochs", o.cold_epochs, 0));
  IC_RETURN_IF_ERROR(at_least("warmup_epochs", o.warmup_epochs, 0));
  IC_RETURN_IF_ERROR(at_least("num_files_infeed", o.num_files_infeed, 1));
  IC_RETURN_IF_ERROR(at_least("num_parallel_calls", o.num_parallel_calls, 1));
  IC_RETURN_IF_ERROR(at_least("followup_shuffle_buffer_size", o.followup_shuffle_buffer_size, 0));
  IC_RETURN_IF_ERROR(at_least("num_threads", o.num_threads, 0));
  IC_RETURN_IF_ERROR(at_least("keep_checkpoint_max", o.keep_checkpoint_max, 1));
  IC_RETURN_IF_ERROR(at_least("micro_batch_size", o.micro_batch_size, 0));
  IC_RETURN_IF_ERROR(at_least("max_image_pixels", o.max_image_pixels, int64_t{1}));
  IC_RETURN_IF_ERROR(at_least("stop_timeout_secs", o.stop_timeout_secs, 0));
  if (!(o.max_bad_input_fraction >= 0 && o.max_bad_input_fraction <= 1)) {
    return error("bad value ", o.max_bad_input_fraction,
                 " for --max_bad_input_fraction (allowed: 0 to 1)");
  }
  if (!(o.min_crop_area > 0 && o.min_crop_area <= 1)) {
    return error("bad value ", o.min_crop_area, " for --min_crop_area (allowed: > 0 and <= 1)");
  }
  if (!(o.weight_decay >= 0)) {
    return error("bad value ", o.weight_decay, " for --weight_decay (allowed: >= 0)");
  }
  if (o.num_train_images < 1) {
    return error("bad value ", o.num_train_images, " for --num_train_images (allowed: >= 1)");
  }
  if (!(o.learning_rate > 0)) {
    return error("bad value ", o.learning_rate, " for --learning_rate (allowed: > 0)");
  }
  if (!(o.learning_rate_decay > 0 && o.learning_rate_decay <= 1)) {
    return error("bad value ", o.learning_rate_decay,
                 " for --learning_rate_decay (allowed: > 0 and <= 1)");
  }
  if (!(o.cold_learning_rate >= 0)) {
    return error("bad value ", o.cold_learning_rate, " for --cold_learning_rate (allowed: >= 0)");
  }
  if (!(o.depth_multiplier > 0)) {
    return error("bad value ", o.depth_multiplier, " for --depth_multiplier (allowed: > 0)");
  }
  if (!(o.cb_distortion_range >= 0 && o.cr_distortion_range >= 0)) {
    return error("bad value for --cb_distortion_range/--cr_distortion_range (allowed: >= 0)");
  }
  if (o.mode == "summary") return Status();
  if (o.use_data == "real" && o.data_dir.empty()) {
    return error("--data_dir is required with --use_data=real (or use --use_data=fake)");
  }
  if (o.model_dir.empty()) {
    return error("--model_dir is required with --mode=", o.mode,
                 " (checkpoints and event files go there)");
  }
  return Status();
}

Status check_memory_fits(const RunOptions& o, uint64_t physical_bytes) {
  if (physical_bytes == 0 || o.mode == "summary") return Status();
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
      return error("--", batch.flag, "=", batch.count, " needs at least ",
                   static_cast<double>(need) / 1e9, " GB for its input batches alone (",
                   kPipelineBatches, " batches x ", batch.count, " images x ",
                   static_cast<double>(image_bytes), " bytes of ", o.height, "x", o.width,
                   "x3 floats), more than this machine's ",
                   static_cast<double>(physical_bytes) / 1e9, " GB of memory");
    }
  }
  return Status();
}

}  // namespace ic
