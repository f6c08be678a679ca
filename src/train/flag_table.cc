#include "train/flag_table.h"

#include <charconv>
#include <cstdlib>

#include "models/model_spec.h"

namespace ic {
namespace {

// The entry makers (number, boolean, text, choice, device) and ranges of cli/flag.h.
using namespace flag_entries;

std::vector<Flag> make_trainer_flags() {
  using O = RunOptions;
  return {
      // The reference's flags (inception_v3.py, inception_v4.py): same names, defaults and
      // meanings. Those marked "accepted" have no effect here (docs/differences.md).
      text("tpu", &O::tpu, "Cloud TPU name or grpc:// address (accepted; unused here)"),
      text("gcp_project", &O::gcp_project, "GCE project of the Cloud TPU (accepted; unused here)"),
      text("tpu_zone", &O::tpu_zone, "GCE zone of the Cloud TPU (accepted; unused here)"),
      text("data_dir", &O::data_dir, "Directory with train-* and validation-* TFRecord shards"),
      text("model_dir", &O::model_dir, "Directory for checkpoints and TensorBoard event files"),
      text("export_dir", &O::export_dir,
           "After the run, export the newest checkpoint as a TensorFlow SavedModel into a new "
           "subdirectory <export_dir>/<unix seconds>/ (what TensorFlow Serving's "
           "model_base_path expects); empty: no export"),
      number("num_shards", &O::num_shards, any_value(),
             "Number of TPU cores (accepted; replicas come from the launcher)"),
      number("iterations", &O::iterations, at_least(1),
             "Training steps per loop; logs, summaries, checkpoints between loops"),
      boolean("skip_host_call", &O::skip_host_call,
              "Reference: skip per-step host summaries (we summarise per loop)"),
      number("train_batch_size", &O::train_batch_size, at_least(1),
             "Global training batch, split across replicas"),
      number("eval_total_size", &O::eval_total_size, at_least(0),
             "Images to evaluate; 0 = the whole validation set"),
      number("eval_batch_size", &O::eval_batch_size, at_least(1), "Global evaluation batch"),
      number("train_steps", &O::train_steps, at_least(0),
             "Total training steps (absolute global step)"),
      number("train_steps_per_eval", &O::train_steps_per_eval, at_least(1),
             "Training steps between evaluations in train_and_eval"),
      choice("mode", &O::mode, "What the run does"),
      number("min_eval_interval", &O::min_eval_interval, any_value(),
             "Reference flag, unused there too (accepted)"),
      number("eval_timeout", &O::eval_timeout, any_value(),
             "Seconds --mode=eval waits for a new checkpoint; < 0: forever"),
      boolean("use_tpu", &O::use_tpu,
              "Use the accelerator: the GPU when there is one, else the CPU"),
      choice("use_data", &O::use_data, "real (TFRecords in --data_dir) or fake (random images)"),
      number("learning_rate", &O::learning_rate, above(0),
             "Learning rate per 256 images (scaled by the batch)"),
      choice("optimizer", &O::optimizer,
             "The optimizer (RMS is RMSProp; train/optimizer.cc has each one's update)"),
      number("num_classes", &O::num_classes, at_least(2),
             "Number of classes (class 0 = background)"),
      number("width", &O::width, at_least(1), "Input image width"),
      number("height", &O::height, at_least(1), "Input image height"),
      boolean("transpose_enabled", &O::transpose_enabled,
              "Reference TPU layout trick (accepted; no effect)"),
      boolean("log_device_placement", &O::log_device_placement,
              "Log the backend and its settings at start-up"),
      number("save_summary_steps", &O::save_summary_steps, at_least(0),
             "Steps between TensorBoard summaries (0 = none)"),
      number("save_checkpoints_secs", &O::save_checkpoints_secs, at_least(0),
             "Seconds between checkpoints (0 = only at the end)"),
      boolean("moving_average", &O::moving_average, "Keep an EMA of the weights; evaluate with it"),
      number("moving_average_decay", &O::moving_average_decay, above_up_to(0, 1),
             "Decay of the weights' EMA (TensorFlow's: at most (1 + step) / (10 + step))"),
      number("rmsprop_epsilon", &O::rmsprop_epsilon, above(0),
             "RMSProp's epsilon, under the root of the mean square (--optimizer=RMS)"),
      choice("preprocessing", &O::preprocessing, "Image preprocessing"),
      boolean("use_annotated_bbox", &O::use_annotated_bbox,
              "Use image/object/bbox as the crop hint"),
      number("learning_rate_decay", &O::learning_rate_decay, above_up_to(0, 1),
             "Exponential learning-rate decay factor"),
      number("learning_rate_decay_epochs", &O::learning_rate_decay_epochs, at_least(1),
             "Epochs per learning-rate decay step"),
      boolean("display_tensors", &O::display_tensors,
              "Reference CPU debugging aid (accepted; no effect)"),
      boolean("clear_update_collections", &O::clear_update_collections,
              "BN moving statistics update in place (always)"),
      number("cold_epochs", &O::cold_epochs, at_least(0),
             "Warmup schedule: epochs at the cold learning rate"),
      number("warmup_epochs", &O::warmup_epochs, at_least(0),
             "Warmup schedule: epochs of linear warmup"),
      boolean("use_learning_rate_warmup", &O::use_learning_rate_warmup,
              "Use the cold + linear warmup schedule (v3)"),
      boolean("prefetch_enabled", &O::prefetch_enabled,
              "Reference flag, unused there too (accepted)"),
      number("prefetch_dataset_buffer_size", &O::prefetch_dataset_buffer_size, any_value(),
             "TFRecord read buffer in bytes"),
      number("num_files_infeed", &O::num_files_infeed, at_least(1),
             "TFRecord files read in parallel"),
      number("num_parallel_calls", &O::num_parallel_calls, at_least(1),
             "Decode/preprocess threads (capped at the core count)"),
      number("initial_shuffle_buffer_size", &O::initial_shuffle_buffer_size, any_value(),
             "Reference flag, unused there too (accepted)"),
      number("followup_shuffle_buffer_size", &O::followup_shuffle_buffer_size, at_least(0),
             "Record shuffle buffer (training)"),
      choice("precision", &O::precision, "Compute precision"),
      number("cb_distortion_range", &O::cb_distortion_range, at_least(0),
             "Chroma (Cb) jitter range of fast colour distortion"),
      number("cr_distortion_range", &O::cr_distortion_range, at_least(0),
             "Chroma (Cr) jitter range of fast colour distortion"),
      boolean("use_fast_color_distort", &O::use_fast_color_distort,
              "Brightness + chroma jitter instead of slim colour ops"),
      number("cold_learning_rate", &O::cold_learning_rate, at_least(0),
             "inception_v4: learning rate of the cold epochs"),
      boolean("per_host_input_for_training", &O::per_host_input_for_training,
              "Reference flag (accepted; one pipeline per process)"),
      // Ours.
      number("depth_multiplier", &O::depth_multiplier, above(0),
             "Multiplies every layer's channel count (TF-slim's)"),
      number("num_threads", &O::num_threads, at_least(0),
             "CPU compute threads; 0 = all cores (more than the cores: capped, with a notice)"),
      device(&O::device, EmptyDevice::allowed,
             "cpu, cuda (one GPU per local process) or cuda:N; empty: decided by --use_tpu"),
      number("seed", &O::seed, any_value(),
             "Seed of initialisation, data order, augmentation and dropout"),
      number("keep_checkpoint_max", &O::keep_checkpoint_max, at_least(1),
             "Checkpoints kept in --model_dir"),
      number("micro_batch_size", &O::micro_batch_size, at_least(0),
             "Images per micro-batch in each process: a step's batch runs as several "
             "micro-batches whose gradients are averaged before one update (a large batch in "
             "the memory of a small one); 0 = the whole batch at once"),
      text("warm_start_from", &O::warm_start_from,
           "A fresh run (no checkpoint in --model_dir yet) starts from this checkpoint's "
           "values: a model_dir, a TensorFlow checkpoint prefix/.index or a .safetensors file. "
           "Variables found with the model's shape are loaded, the rest start fresh"),
      text("trainable_scopes", &O::trainable_scopes,
           "Comma-separated scope prefixes (TF-slim's, e.g. InceptionV3/Logits,"
           "InceptionV3/AuxLogits): only variables under them are trained; empty = all"),
      choice("checkpoint_format", &O::checkpoint_format,
             "Format of the checkpoints written: tf (TensorFlow's model.ckpt-N.index + "
             ".data-00000-of-00001) or safetensors (model.ckpt-N.safetensors); both are read"),
      number("num_train_images", &O::num_train_images, at_least(1),
             "Training images per epoch (learning-rate schedule, current_epoch); ImageNet's "
             "by default as the reference"),
      number("min_crop_area", &O::min_crop_area, above_up_to(0, 1),
             "Inception training crops cover at least this fraction of the image area "
             "(the reference's fixed area_range starts at 0.05)"),
      number("weight_decay", &O::weight_decay, at_least(0),
             "L2 factor on every kernel (the reference's WEIGHT_DECAY; resnet50: 1e-4)"),
      number("label_smoothing", &O::label_smoothing, from_to(0, 1),
             "Label smoothing of the training and evaluation losses (the reference's 0.1; "
             "resnet50: 0)"),
      number("batch_norm_decay", &O::batch_norm_decay, from_to(0, 1),
             "Decay of batch norm's moving mean and variance (each model's reference value by "
             "default); 0 keeps the last batch's statistics"),
      number("max_image_pixels", &O::max_image_pixels, at_least(1),
             "Images whose header claims more pixels are refused before decoding (a bad "
             "input in training)"),
      number("max_bad_input_fraction", &O::max_bad_input_fraction, from_to(0, 1),
             "Stop when more than this fraction of a training loop's records are corrupt or "
             "their images undecodable"),
      boolean("eval_skip_corrupt", &O::eval_skip_corrupt,
              "Evaluation skips damaged validation records and evaluates the rest, logging "
              "how many records it evaluated of how many the files hold; false: a damaged "
              "record fails the evaluation, naming the file and byte offset, with no score"),
      number("stop_timeout_secs", &O::stop_timeout_secs, at_least(0),
             "After SIGINT/SIGTERM, seconds to wait for the checkpoint at the next step "
             "boundary before exiting at once (a second signal exits at once)"),
      choice("export_best", &O::export_best,
             "After each evaluation whose score on this metric beats every earlier export "
             "under --export_dir (also those of earlier runs), export the evaluated checkpoint "
             "there as a SavedModel, with the score and step in assets.extra/best_export.json "
             "(TensorFlow's BestExporter); replaces the export at the end of the run; none: off"),
      choice("export_best_mode", &O::export_best_mode,
             "Whether a higher (max) or lower (min) --export_best score is better; auto: min "
             "for loss, max for the accuracies"),
      number("exports_to_keep", &O::exports_to_keep, at_least(0),
             "--export_best keeps this many of its newest exports under --export_dir and "
             "deletes older ones (0: keeps all)"),
      number("stop_at_step", &O::stop_at_step, at_least(0),
             "Stop training at this global step (saving a checkpoint and, in train_and_eval, "
             "evaluating) while --train_steps still sets the learning-rate schedule, so a run "
             "continued later to a higher step is the same as one never stopped; 0: train to "
             "--train_steps"),
  };
}

}  // namespace

const FlagTable<RunOptions>& trainer_flag_table() {
  static const FlagTable<RunOptions> table(make_trainer_flags());
  return table;
}

const std::vector<Flag>& trainer_flags() { return trainer_flag_table().flags(); }

namespace {

// A float default as the decimal it was written as (0.1f is 0.1, not 0.10000000149011612), so
// --help shows it so and the run's flags say it so.
double float_as_written(float v) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, v).ptr;
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

}  // namespace

Result<RunOptions> default_run_options(const std::string& model) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(model));
  const ModelRecipe& r = spec->recipe;
  RunOptions o;
  o.model = model;
  o.optimizer = find_optimizer(r.optimizer);
  if (o.optimizer == nullptr) {
    return error(model, "'s registry entry names an optimizer the table lacks: ", r.optimizer);
  }
  o.learning_rate = r.learning_rate;
  o.train_batch_size = r.train_batch_size;
  o.train_steps = r.train_steps;
  o.learning_rate_decay_epochs = r.learning_rate_decay_epochs;
  o.use_learning_rate_warmup = r.use_learning_rate_warmup;
  o.cold_epochs = r.cold_epochs;
  o.warmup_epochs = r.warmup_epochs;
  o.weight_decay = r.weight_decay;
  o.label_smoothing = float_as_written(spec->network.label_smoothing);
  o.batch_norm_decay = float_as_written(spec->network.batch_norm_decay);
  o.moving_average = r.moving_average;
  o.num_classes = static_cast<int32_t>(spec->network.num_classes);
  o.width = static_cast<int32_t>(spec->network.width);
  o.height = static_cast<int32_t>(spec->network.height);
  for (const FlagDefault& d : spec->flag_defaults) {
    const Flag* flag = trainer_flag_table().find(d.flag);
    if (flag == nullptr) return error(model, "'s registry entry sets an unknown flag --", d.flag);
    IC_RETURN_IF_ERROR(flag->set(o, d.value).with_context(model + "'s registry default"));
  }
  return o;
}

std::string flags_as_text(const RunOptions& options) {
  return flags_as_text(trainer_flag_table(), options);
}

}  // namespace ic
