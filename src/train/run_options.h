// Everything a training/evaluation run is told from the command line (train/flag_table.cc
// declares each flag once: name, type, help, allowed values and the member here it sets): the flags
// of the reference inception_v3.py (tensorflow/tpu) and inception_v4.py with the same names,
// defaults and meanings, plus ours (depth_multiplier, num_threads, device, seed,
// keep_checkpoint_max, checkpoint_format, warm_start_from). Flags the reference defines but that
// have no effect here (TPU addresses, transpose, prefetch sizes...) are accepted and listed in
// docs/differences.md.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "train/choices.h"

namespace ic {

struct RunOptions {
  std::string model;  // "inception_v3", "inception_v4", "resnet50" (set by the program)

  // Cloud TPU addressing: accepted, unused.
  std::string tpu, gcp_project, tpu_zone;
  std::string data_dir, model_dir, export_dir;
  int32_t num_shards = 8;  // replicas the global batch is split over on a TPU; unused here
  int32_t iterations = 100;
  bool skip_host_call = true;
  int32_t train_batch_size = 1024;  // global
  int32_t eval_total_size = 0;      // 0: the whole validation set
  int32_t eval_batch_size = 1024;   // global
  int32_t train_steps = 213000;
  int32_t train_steps_per_eval = 2000;
  // > 0: training stops at this step (with a checkpoint and, in train_and_eval, an
  // evaluation) while train_steps still sets the schedule, so that a run continued later with
  // a higher value (or none) is the same run as one uninterrupted: a successive-halving sweep
  // trains its variants in stages this way. 0: train to train_steps.
  int32_t stop_at_step = 0;
  Mode mode = Mode::train_and_eval;
  int32_t min_eval_interval = 180;
  int32_t eval_timeout = -1;  // seconds; < 0: wait forever (the reference's None)
  bool use_tpu = true;        // "use the accelerator": the GPU when there is one
  UseData use_data = UseData::real;
  double learning_rate = 0.165;
  const Optimizer* optimizer = find_optimizer("RMS");  // an optimizer table entry; the reference's
  int32_t num_classes = 1001;
  int32_t width = 299, height = 299;
  bool transpose_enabled = false;
  bool log_device_placement = false;
  int32_t save_summary_steps = 100;
  int32_t save_checkpoints_secs = 1000;
  bool moving_average = true;
  // The EMA's decay (inception_v3.py's MOVING_AVERAGE_DECAY; EfficientNet's
  // --moving_average_decay is 0.9999).
  double moving_average_decay = 0.995;
  // RMSProp's epsilon (inception_v3.py's RMSPROP_EPSILON; EfficientNet's build_optimizer
  // passes 0.001).
  double rmsprop_epsilon = 1.0;
  Preprocessing preprocessing = Preprocessing::inception;
  bool use_annotated_bbox = false;
  double learning_rate_decay = 0.94;
  int32_t learning_rate_decay_epochs = 3;
  bool display_tensors = false;
  bool clear_update_collections = true;
  int32_t cold_epochs = 2;
  int32_t warmup_epochs = 7;
  bool use_learning_rate_warmup = false;
  bool prefetch_enabled = true;
  int32_t prefetch_dataset_buffer_size = 8 * 1024 * 1024;
  int32_t num_files_infeed = 8;
  int32_t num_parallel_calls = 64;
  int32_t initial_shuffle_buffer_size = 1024;
  int32_t followup_shuffle_buffer_size = 1000;
  Precision precision = Precision::float32;
  double cb_distortion_range = 0.1, cr_distortion_range = 0.1;
  bool use_fast_color_distort = true;
  // inception_v4.py extras.
  double cold_learning_rate = 0.001;
  bool per_host_input_for_training = true;
  // Ours.
  double depth_multiplier = 1.0;
  int32_t num_threads = 0;  // compute threads; 0 = all cores
  DeviceChoice device;      // "" (from --use_tpu), "cpu", "cuda", "cuda:N"
  int64_t seed = 0;
  int32_t keep_checkpoint_max = 5;
  // Images per micro-batch in each process (0: the process's whole share of the batch).
  int32_t micro_batch_size = 0;
  // What save_checkpoint writes: tf (TensorFlow's V2 bundle, so TensorFlow's tools read the
  // model_dir) or safetensors. Either is read back whatever this says.
  CheckpointFormat checkpoint_format = CheckpointFormat::tf;
  // A checkpoint (or a model_dir's latest) whose variables initialise a fresh run, by TF-slim
  // name where the shape matches (TensorFlow's warm start); ignored when resuming.
  std::string warm_start_from;
  // TF-slim train_image_classifier's --trainable_scopes: comma-separated scope prefixes; only
  // the trainable variables under them are updated by the optimizer (empty: all of them).
  std::string trainable_scopes;
  // Training images per epoch, for the epoch-based learning-rate schedules and
  // current_epoch. The reference hard-codes ImageNet's 1,281,167; other data sets set it.
  int64_t num_train_images = 1281167;
  // The smallest crop, as a fraction of the image area, that Inception training
  // preprocessing samples (sample_distorted_bounding_box's area_range starts here).
  double min_crop_area = 0.05;
  // The L2 factor on kernels: loss += weight_decay * sum(w^2) / 2 (4e-5 for Inception,
  // 1e-4 for ResNet-50, as the reference hard-codes them).
  double weight_decay = 4e-5;
  // The losses' label smoothing: 0.1 for Inception, 0 for ResNet-50, as the reference's.
  double label_smoothing = 0.1;
  // Batch norm's moving-average decay (the network's default: the registry's).
  double batch_norm_decay = 0.996;
  // Bad input (docs/data.md, "Errors and bad input"). An image whose header claims more pixels
  // than this is refused before it is decoded (counted as a bad input in training).
  int64_t max_image_pixels = 100000000;
  // A training loop (--iterations steps) whose inputs were more than this fraction corrupt
  // records or undecodable images stops the run with an error.
  double max_bad_input_fraction = 0.01;
  // An evaluation pass that met damaged validation records (a bad CRC, a cut or unreadable
  // record) fails, naming each, so that no score is reported over part of the set as if it were
  // all of it; true scores the rest (the log says how many records of how many).
  bool eval_skip_corrupt = false;
  // After SIGINT/SIGTERM, seconds to wait for a step boundary (where the checkpoint is
  // written) before exiting at once; a second signal exits at once anyway.
  int32_t stop_timeout_secs = 60;
  // TensorFlow's BestExporter: after each evaluation that beats every earlier export's
  // `export_best` score (in export_dir, so across restarts), the evaluated checkpoint is
  // exported to export_dir; only the newest exports_to_keep such exports are kept (0: all).
  // It replaces the export at the end of the run.
  ExportBestMetric export_best = ExportBestMetric::none;
  ExportBestMode export_best_mode = ExportBestMode::auto_;
  int32_t exports_to_keep = 5;
};

// Checks every value against what it may be (each flag's range from the flag table, then the
// rules that join flags: --data_dir with real data, --model_dir outside summary); the message
// names the flag and the allowed values. Pure: no files or devices are touched.
Status validate_run_options(const RunOptions& options);

// Refuses batch and buffer sizes whose input memory alone is beyond `physical_bytes` (0 =
// unknown: no check): each of the input pipeline's 4 batches holds batch x height x width x 3
// floats. The message gives the figures. (The shuffle buffer's need depends on the records'
// size; the input pipeline checks it when it has seen the data.)
Status check_memory_fits(const RunOptions& options, uint64_t physical_bytes);

}  // namespace ic
