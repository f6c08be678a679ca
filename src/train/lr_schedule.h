// Learning-rate schedules of the reference applications, as functions of the global step:
//   inception_v3  tensorflow/tpu models/experimental/inception/inception_v3.py
//   inception_v4  …/inception_v4.py (cold phase, linear warmup, then decay; always on)
//   resnet50      models/official/resnet/resnet_main.py (linear warmup, ×0.1 steps), with the
//                 5/30/60/80-of-90-epoch boundaries scaled to train_steps as get_lr_schedule().
//   mobilenet     models/official/mobilenet/mobilenet.py (staircase decay per whole-batch epochs)
//   efficientnet  models/official/efficientnet/utils.py build_learning_rate('exponential'):
//                 linear warmup over warmup_epochs, then ×decay_rate every 2.4 epochs. The
//                 2.4 (main.py's --lr_decay_epoch) is fixed here: --learning_rate_decay_epochs
//                 is an integer flag, and this kind does not read it.
//   densenet      models/official/densenet/densenet_imagenet.py (stepped warmup, fixed epochs)
//   squeezenet    models/official/squeezenet/squeezenet_model.py (linear decay to 1/6)
// The reference computes in float32 on the device; we compute in double, except where the
// float32 rounding decides a boundary (the epoch counter), which we reproduce.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "models/model_spec.h"

namespace ic {

// EfficientNet's --lr_decay_epoch.
constexpr double kEfficientNetDecayEpochs = 2.4;

struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::inception_v3;  // the model's (models/model_spec.h)
  double base_learning_rate = 0.165;                   // --learning_rate (per 256 images)
  int64_t train_batch_size = 1024;                     // global batch
  double decay_rate = 0.94;                            // --learning_rate_decay
  double decay_epochs = 3;                             // --learning_rate_decay_epochs
  bool use_warmup = false;            // --use_learning_rate_warmup (v3 only; v4 always warms up)
  double cold_epochs = 2;             // --cold_epochs
  double warmup_epochs = 7;           // --warmup_epochs
  double cold_learning_rate = 0.001;  // --cold_learning_rate (v4)
  int64_t num_train_images = 1281167;
  // resnet50: the run's length, which the epoch boundaries scale to; squeezenet: its decay
  // lasts train_steps / 8.
  int64_t train_steps = 0;
};

// The reference defaults of the registered model `model` (its ModelRecipe: the flags of
// inception_v3.py / inception_v4.py / resnet_main.py's config ..., and its learning_rate_decay
// flag default where it sets one); an error for an unknown name.
Result<LrScheduleOptions> default_lr_schedule(const std::string& model);

// Rejects non-positive batch size, image count, decay epochs.
Status validate_lr_schedule(const LrScheduleOptions& options);

double learning_rate(const LrScheduleOptions& options, int64_t global_step);

// Inception: int(float32(step) / float32(num_train_images / batch)), the reference's
// current_epoch; the other kinds: the unrounded float32 epoch (resnet_main.py's).
double current_epoch(const LrScheduleOptions& options, int64_t global_step);

}  // namespace ic
