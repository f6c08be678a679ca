#include "train/train_flags.h"

#include <gflags/gflags.h>

#include <sstream>
#include <string>
#include <utility>

#include "models/model_spec.h"
#include "train/flag_parser.h"

// The reference's flags (inception_v3.py, inception_v4.py), same names and defaults as
// inception_v3.py.
DEFINE_string(tpu, "", "Cloud TPU name or grpc:// address (accepted; unused here)");
DEFINE_string(gcp_project, "", "GCE project of the Cloud TPU (accepted; unused here)");
DEFINE_string(tpu_zone, "", "GCE zone of the Cloud TPU (accepted; unused here)");
DEFINE_string(data_dir, "", "Directory with train-* and validation-* TFRecord shards");
DEFINE_string(model_dir, "", "Directory for checkpoints and TensorBoard event files");
DEFINE_string(export_dir, "",
              "After the run, export the newest checkpoint as a TensorFlow SavedModel into a new "
              "subdirectory <export_dir>/<unix seconds>/ (what TensorFlow Serving's "
              "model_base_path expects); empty: no export");
DEFINE_int32(num_shards, 8, "Number of TPU cores (accepted; replicas come from the launcher)");
DEFINE_int32(iterations, 100,
             "Training steps per loop; logs, summaries, checkpoints between loops");
DEFINE_bool(skip_host_call, true,
            "Reference: skip per-step host summaries (we summarise per loop)");
DEFINE_int32(train_batch_size, 1024, "Global training batch, split across replicas");
DEFINE_int32(eval_total_size, 0, "Images to evaluate; 0 = the whole validation set");
DEFINE_int32(eval_batch_size, 1024, "Global evaluation batch");
DEFINE_int32(train_steps, 213000, "Total training steps (absolute global step)");
DEFINE_int32(train_steps_per_eval, 2000, "Training steps between evaluations in train_and_eval");
DEFINE_string(mode, "train_and_eval", "One of train, eval, train_and_eval, summary");
DEFINE_int32(min_eval_interval, 180, "Reference flag, unused there too (accepted)");
DEFINE_int32(eval_timeout, -1, "Seconds --mode=eval waits for a new checkpoint; < 0: forever");
DEFINE_bool(use_tpu, true, "Use the accelerator: the GPU when there is one, else the CPU");
DEFINE_string(use_data, "real", "real (TFRecords in --data_dir) or fake (random images)");
DEFINE_double(learning_rate, 0.165, "Learning rate per 256 images (scaled by the batch)");
DEFINE_string(optimizer, "RMS", "One of sgd, momentum, RMS");
DEFINE_int32(num_classes, 1001, "Number of classes (class 0 = background)");
DEFINE_int32(width, 299, "Input image width");
DEFINE_int32(height, 299, "Input image height");
DEFINE_bool(transpose_enabled, false, "Reference TPU layout trick (accepted; no effect)");
DEFINE_bool(log_device_placement, false, "Log the backend and its settings at start-up");
DEFINE_int32(save_summary_steps, 100, "Steps between TensorBoard summaries (0 = none)");
DEFINE_int32(save_checkpoints_secs, 1000, "Seconds between checkpoints (0 = only at the end)");
DEFINE_bool(moving_average, true, "Keep an EMA of the weights; evaluate with it");
DEFINE_string(preprocessing, "inception", "Image preprocessing: inception or vgg");
DEFINE_bool(use_annotated_bbox, false, "Use image/object/bbox as the crop hint");
DEFINE_double(learning_rate_decay, 0.94, "Exponential learning-rate decay factor");
DEFINE_int32(learning_rate_decay_epochs, 3, "Epochs per learning-rate decay step");
DEFINE_bool(display_tensors, false, "Reference CPU debugging aid (accepted; no effect)");
DEFINE_bool(clear_update_collections, true, "BN moving statistics update in place (always)");
DEFINE_int32(cold_epochs, 2, "Warmup schedule: epochs at the cold learning rate");
DEFINE_int32(warmup_epochs, 7, "Warmup schedule: epochs of linear warmup");
DEFINE_bool(use_learning_rate_warmup, false, "Use the cold + linear warmup schedule (v3)");
DEFINE_bool(prefetch_enabled, true, "Reference flag, unused there too (accepted)");
DEFINE_int32(prefetch_dataset_buffer_size, 8 * 1024 * 1024, "TFRecord read buffer in bytes");
DEFINE_int32(num_files_infeed, 8, "TFRecord files read in parallel");
DEFINE_int32(num_parallel_calls, 64, "Decode/preprocess threads (capped at the core count)");
DEFINE_int32(initial_shuffle_buffer_size, 1024, "Reference flag, unused there too (accepted)");
DEFINE_int32(followup_shuffle_buffer_size, 1000, "Record shuffle buffer (training)");
DEFINE_string(precision, "float32", "Compute precision: float32 or bfloat16");
DEFINE_double(cb_distortion_range, 0.1, "Chroma (Cb) jitter range of fast colour distortion");
DEFINE_double(cr_distortion_range, 0.1, "Chroma (Cr) jitter range of fast colour distortion");
DEFINE_bool(use_fast_color_distort, true, "Brightness + chroma jitter instead of slim colour ops");
DEFINE_double(cold_learning_rate, 0.001, "inception_v4: learning rate of the cold epochs");
DEFINE_bool(per_host_input_for_training, true,
            "Reference flag (accepted; one pipeline per process)");
// Ours.
DEFINE_double(depth_multiplier, 1.0, "Multiplies every layer's channel count (TF-slim's)");
DEFINE_int32(num_threads, 0, "CPU compute threads; 0 = all cores");
DEFINE_string(device, "", "cpu or cuda:N; empty: decided by --use_tpu");
DEFINE_int64(seed, 0, "Seed of initialisation, data order, augmentation and dropout");
DEFINE_int32(keep_checkpoint_max, 5, "Checkpoints kept in --model_dir");
DEFINE_int32(micro_batch_size, 0,
             "Images per micro-batch in each process: a step's batch runs as several "
             "micro-batches whose gradients are averaged before one update (a large batch in "
             "the memory of a small one); 0 = the whole batch at once");
DEFINE_string(warm_start_from, "",
              "A fresh run (no checkpoint in --model_dir yet) starts from this checkpoint's "
              "values: a model_dir, a TensorFlow checkpoint prefix/.index or a .safetensors file. "
              "Variables found with the model's shape are loaded, the rest start fresh");
DEFINE_string(trainable_scopes, "",
              "Comma-separated scope prefixes (TF-slim's, e.g. InceptionV3/Logits,"
              "InceptionV3/AuxLogits): only variables under them are trained; empty = all");
DEFINE_string(checkpoint_format, "tf",
              "Format of the checkpoints written: tf (TensorFlow's model.ckpt-N.index + "
              ".data-00000-of-00001) or safetensors (model.ckpt-N.safetensors); both are read");
DEFINE_int64(num_train_images, 1281167,
             "Training images per epoch (learning-rate schedule, current_epoch); ImageNet's "
             "by default as the reference");
DEFINE_double(min_crop_area, 0.05,
              "Inception training crops cover at least this fraction of the image area "
              "(the reference's fixed area_range starts at 0.05)");
DEFINE_double(weight_decay, 4e-5,
              "L2 factor on every kernel (the reference's WEIGHT_DECAY; resnet50: 1e-4)");
DEFINE_int64(max_image_pixels, 100000000,
             "Images whose header claims more pixels are refused before decoding (a bad "
             "input in training)");
DEFINE_double(max_bad_input_fraction, 0.01,
              "Stop when more than this fraction of a training loop's records are corrupt or "
              "their images undecodable");
DEFINE_int32(stop_timeout_secs, 60,
             "After SIGINT/SIGTERM, seconds to wait for the checkpoint at the next step "
             "boundary before exiting at once (a second signal exits at once)");

namespace ic {
namespace {

// A default as the command line would spell it: 0.165, 4e-05, 1024.
template <typename T>
std::string flag_text(T value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

Status set_default(const char* name, const char* value) {
  if (gflags::SetCommandLineOptionWithMode(name, value, gflags::SET_FLAGS_DEFAULT).empty()) {
    return error("cannot set the default of --", name, " to ", value);
  }
  return Status();
}

}  // namespace

Status set_model_defaults(const std::string& model) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(model));
  const ModelRecipe& r = spec->recipe;
  const ModelOptions& net = spec->network;
  // Every model sets every recipe flag, so the defaults never depend on which model a process
  // (or a test) parsed before.
  const std::pair<const char*, std::string> defaults[] = {
      {"optimizer", r.optimizer},
      {"learning_rate", flag_text(r.learning_rate)},
      {"train_batch_size", flag_text(r.train_batch_size)},
      {"train_steps", flag_text(r.train_steps)},
      {"learning_rate_decay_epochs", flag_text(r.learning_rate_decay_epochs)},
      {"use_learning_rate_warmup", r.use_learning_rate_warmup ? "true" : "false"},
      {"cold_epochs", flag_text(r.cold_epochs)},
      {"warmup_epochs", flag_text(r.warmup_epochs)},
      {"weight_decay", flag_text(r.weight_decay)},
      {"moving_average", r.moving_average ? "true" : "false"},
      {"num_classes", flag_text(net.num_classes)},
      {"width", flag_text(net.width)},
      {"height", flag_text(net.height)},
  };
  for (const auto& [flag, value] : defaults) IC_RETURN_IF_ERROR(set_default(flag, value.c_str()));
  for (const FlagDefault& d : spec->flag_defaults) IC_RETURN_IF_ERROR(set_default(d.flag, d.value));
  return Status();
}

RunOptions read_run_options(const std::string& model) {
  RunOptions o;
  o.model = model;
  o.tpu = FLAGS_tpu;
  o.gcp_project = FLAGS_gcp_project;
  o.tpu_zone = FLAGS_tpu_zone;
  o.data_dir = FLAGS_data_dir;
  o.model_dir = FLAGS_model_dir;
  o.export_dir = FLAGS_export_dir;
  o.num_shards = FLAGS_num_shards;
  o.iterations = FLAGS_iterations;
  o.skip_host_call = FLAGS_skip_host_call;
  o.train_batch_size = FLAGS_train_batch_size;
  o.eval_total_size = FLAGS_eval_total_size;
  o.eval_batch_size = FLAGS_eval_batch_size;
  o.train_steps = FLAGS_train_steps;
  o.train_steps_per_eval = FLAGS_train_steps_per_eval;
  o.mode = FLAGS_mode;
  o.min_eval_interval = FLAGS_min_eval_interval;
  o.eval_timeout = FLAGS_eval_timeout;
  o.use_tpu = FLAGS_use_tpu;
  o.use_data = FLAGS_use_data;
  o.learning_rate = FLAGS_learning_rate;
  o.optimizer = FLAGS_optimizer;
  o.num_classes = FLAGS_num_classes;
  o.width = FLAGS_width;
  o.height = FLAGS_height;
  o.transpose_enabled = FLAGS_transpose_enabled;
  o.log_device_placement = FLAGS_log_device_placement;
  o.save_summary_steps = FLAGS_save_summary_steps;
  o.save_checkpoints_secs = FLAGS_save_checkpoints_secs;
  o.moving_average = FLAGS_moving_average;
  o.preprocessing = FLAGS_preprocessing;
  o.use_annotated_bbox = FLAGS_use_annotated_bbox;
  o.learning_rate_decay = FLAGS_learning_rate_decay;
  o.learning_rate_decay_epochs = FLAGS_learning_rate_decay_epochs;
  o.display_tensors = FLAGS_display_tensors;
  o.clear_update_collections = FLAGS_clear_update_collections;
  o.cold_epochs = FLAGS_cold_epochs;
  o.warmup_epochs = FLAGS_warmup_epochs;
  o.use_learning_rate_warmup = FLAGS_use_learning_rate_warmup;
  o.prefetch_enabled = FLAGS_prefetch_enabled;
  o.prefetch_dataset_buffer_size = FLAGS_prefetch_dataset_buffer_size;
  o.num_files_infeed = FLAGS_num_files_infeed;
  o.num_parallel_calls = FLAGS_num_parallel_calls;
  o.initial_shuffle_buffer_size = FLAGS_initial_shuffle_buffer_size;
  o.followup_shuffle_buffer_size = FLAGS_followup_shuffle_buffer_size;
  o.precision = FLAGS_precision;
  o.cb_distortion_range = FLAGS_cb_distortion_range;
  o.cr_distortion_range = FLAGS_cr_distortion_range;
  o.use_fast_color_distort = FLAGS_use_fast_color_distort;
  o.cold_learning_rate = FLAGS_cold_learning_rate;
  o.per_host_input_for_training = FLAGS_per_host_input_for_training;
  o.depth_multiplier = FLAGS_depth_multiplier;
  o.num_threads = FLAGS_num_threads;
  o.device = FLAGS_device;
  o.seed = FLAGS_seed;
  o.keep_checkpoint_max = FLAGS_keep_checkpoint_max;
  o.micro_batch_size = FLAGS_micro_batch_size;
  o.checkpoint_format = FLAGS_checkpoint_format;
  o.warm_start_from = FLAGS_warm_start_from;
  o.trainable_scopes = FLAGS_trainable_scopes;
  o.num_train_images = FLAGS_num_train_images;
  o.min_crop_area = FLAGS_min_crop_area;
  o.weight_decay = FLAGS_weight_decay;
  o.max_image_pixels = FLAGS_max_image_pixels;
  o.max_bad_input_fraction = FLAGS_max_bad_input_fraction;
  o.stop_timeout_secs = FLAGS_stop_timeout_secs;
  o.flags_text = flags_as_text(training_flag_files());
  return o;
}

Result<RunOptions> parse_run_options(const std::string& model, int argc, const char* const* argv,
                                     bool* help) {
  IC_RETURN_IF_ERROR(set_model_defaults(model));
  IC_ASSIGN_OR_RETURN(ParsedCommandLine parsed,
                      parse_command_line(argc, argv, training_flag_files()));
  *help = parsed.help;
  if (!parsed.positional.empty()) {
    return error("unexpected argument '", parsed.positional.front(),
                 "' (every setting is a --flag; --help lists them)");
  }
  RunOptions options = read_run_options(model);
  if (!parsed.help) IC_RETURN_IF_ERROR(validate_run_options(options));
  return options;
}

}  // namespace ic
