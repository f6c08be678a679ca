// int8 calibration (post-training quantization): the activation scales of a model's int8
// layers, from its float32 inference graph run over real images.
//
// Every convolution and dense layer of the folded inference graph is a candidate. For each
// value such a layer reads, calibration records the largest value of each batch (padding rows
// left out) and the smallest value seen; the input scale is the mean of the batches' largest
// values over kInt8ActivationMax (a value above it saturates at 127: the mean of the maxima, not
// the single largest, keeps a rare outlier from coarsening every other value's step). A layer
// whose input is ever negative (the first convolution reads the images, in [-1, 1]) or always
// zero stays float32.
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/quantize_pass.h"
#include "runtime/inference_model.h"

namespace ic {

struct CalibrationOptions {
  std::string data_dir;                // TFRecord shards of tf.Example images (data/)
  std::string file_prefix = "train-";  // which shards: read in sorted order, once
  int64_t images = 512;                // the first this many images of those files
  int64_t batch_size = 32;
};

// The QuantizationTable of `model` (input scales as above; weight scales per output channel of
// the weights in model.weights). Errors name the data directory (no such files, no image read)
// or the checkpoint.
Result<QuantizationTable> calibrate_int8(Backend& backend, const InferenceModel& model,
                                         const CalibrationOptions& options);

// The training run's --data_dir, read from the checkpoint's recorded flags; empty when the
// flags do not name one (a run on fake data, a checkpoint from elsewhere).
std::string training_data_dir(const CheckpointMeta& meta);

// What the int8 exports run (export_model --format=int8, sweep --export_format=int8):
// calibrate_int8 on a CPU backend of `num_threads` threads (0: every core), over
// options.data_dir or, when that is empty, the directory the checkpoint was trained on; sets
// model.int8. An error when neither names a directory.
Status calibrate_on_cpu(InferenceModel& model, CalibrationOptions options, int num_threads);

}  // namespace ic
