#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace ic {
namespace {

double batches_per_epoch(const LrScheduleOptions& o) {
  return static_cast<double>(o.num_train_images) / static_cast<double>(o.train_batch_size);
}

// The reference's int(tf.cast(step, f32) / batches_per_epoch): a float32 division, whose
// rounding decides on which step an epoch begins.
int64_t integer_epoch(const LrScheduleOptions& o, int64_t step) {
  const float epoch = static_cast<float>(step) / static_cast<float>(batches_per_epoch(o));
  return static_cast<int64_t>(epoch);
}

// tf.train.exponential_decay(lr, step, decay_steps, rate, staircase=True).
double staircase_decay(double lr, int64_t step, int64_t decay_steps, double rate) {
  // decay_steps = int(decay_epochs * batches_per_epoch) is 0 only for a dataset smaller than a
  // batch per decay period; the reference would divide by zero there, we decay every step.
  decay_steps = std::max<int64_t>(decay_steps, 1);
  return lr * std::pow(rate, static_cast<double>(step / decay_steps));
}

double inception_v3_lr(const LrScheduleOptions& o, int64_t step) {
  const double initial = o.base_learning_rate * static_cast<double>(o.train_batch_size) / 256;
  const double final_lr = 0.0001 * initial;
  const auto decay_steps = static_cast<int64_t>(o.decay_epochs * batches_per_epoch(o));
  double lr = staircase_decay(initial, step, decay_steps, o.decay_rate);
  if (o.use_warmup) {
    // Warm up linearly to where the decay would be at the end of warmup, then jump back onto
    // the unadjusted decay curve at epoch warmup + cold + decay_epochs (as the reference does).
    const double adjusted =
        initial * std::pow(o.decay_rate, (o.warmup_epochs + o.cold_epochs) / o.decay_epochs);
    const double wlr = 0.1 * adjusted;
    const double wlr_height = 0.9 * adjusted / (o.warmup_epochs + o.decay_epochs - 1);
    const auto epoch_offset = static_cast<int64_t>(o.cold_epochs - 1);
    const double exp_decay_start = o.warmup_epochs + o.cold_epochs + o.decay_epochs;
    const auto epoch = static_cast<double>(integer_epoch(o, step));
    if (epoch < o.cold_epochs) {
      lr = wlr;
    } else if (epoch < exp_decay_start) {
      lr = wlr + (epoch - static_cast<double>(epoch_offset)) * wlr_height;
    }
  }
  return std::max(lr, final_lr);
}

double inception_v4_lr(const LrScheduleOptions& o, int64_t step) {
  const double initial = o.base_learning_rate * static_cast<double>(o.train_batch_size) / 256 /
                         std::pow(o.decay_rate, (o.warmup_epochs + o.cold_epochs) / o.decay_epochs);
  const double final_lr = 0.0001 * initial;
  const auto epoch = static_cast<double>(integer_epoch(o, step));
  double lr;
  if (epoch < o.cold_epochs) {
    lr = o.cold_learning_rate;
  } else if (epoch < o.warmup_epochs + o.cold_epochs) {
    lr = epoch * initial / (o.warmup_epochs + o.cold_epochs);
  } else {
    const auto decay_steps = static_cast<int64_t>(o.decay_epochs * batches_per_epoch(o));
    lr = staircase_decay(initial, step, decay_steps, o.decay_rate);
  }
  return std::max(lr, final_lr);
}

double resnet50_lr(const LrScheduleOptions& o, int64_t step) {
  const double scaled = o.base_learning_rate * static_cast<double>(o.train_batch_size) / 256;
  // get_lr_schedule(): the 90-epoch schedule's boundaries scaled to the run's length.
  const double steps_per_epoch = std::floor(batches_per_epoch(o));
  const double train_epochs = o.train_steps > 0 && steps_per_epoch > 0
                                  ? static_cast<double>(o.train_steps) / steps_per_epoch
                                  : 90;
  struct Stage {
    double multiplier, start_epoch;
  };
  const Stage stages[] = {{1.0, std::floor(5.0 / 90 * train_epochs)},
                          {0.1, std::floor(30.0 / 90 * train_epochs)},
                          {0.01, std::floor(60.0 / 90 * train_epochs)},
                          {0.001, std::floor(80.0 / 90 * train_epochs)}};
  const double epoch = current_epoch(o, step);
  // Linear warmup from 0; a zero-length warmup (a very short run) starts at the full rate.
  double lr = stages[0].start_epoch > 0 ? scaled * epoch / stages[0].start_epoch : scaled;
  for (const Stage& s : stages) {
    if (epoch >= s.start_epoch) lr = scaled * s.multiplier;
  }
  return lr;
}

// mobilenet.py: tf.train.exponential_decay(staircase=True) every decay_epochs * (images //
// batch) steps, never under 1e-4 of the initial rate (the Inception formula, but with whole
// batches per epoch).
double mobilenet_lr(const LrScheduleOptions& o, int64_t step) {
  const double initial = o.base_learning_rate * static_cast<double>(o.train_batch_size) / 256;
  const int64_t whole_batches = o.num_train_images / o.train_batch_size;
  const auto decay_steps =
      static_cast<int64_t>(o.decay_epochs * static_cast<double>(whole_batches));
  return std::max(staircase_decay(initial, step, decay_steps, o.decay_rate), 0.0001 * initial);
}

// EfficientNet's utils.build_learning_rate(lr_decay_type='exponential'): staircase decay every
// steps_per_epoch * 2.4 (a float; TensorFlow divides in float32), and for the first
// int(warmup_epochs * steps_per_epoch) steps a linear ramp from 0 instead. No floor.
double efficientnet_lr(const LrScheduleOptions& o, int64_t step) {
  const double initial = o.base_learning_rate * static_cast<double>(o.train_batch_size) / 256;
  const double steps_per_epoch = batches_per_epoch(o);
  const auto warmup_steps = static_cast<int64_t>(o.warmup_epochs * steps_per_epoch);
  if (o.warmup_epochs > 0 && step < warmup_steps)
    return initial * static_cast<double>(step) / static_cast<double>(warmup_steps);
  const float decay_steps = static_cast<float>(steps_per_epoch * kEfficientNetDecayEpochs);
  const float p = std::floor(static_cast<float>(step) / decay_steps);
  return initial * std::pow(o.decay_rate, static_cast<double>(p));
}

// densenet_imagenet.py's learning_rate_schedule(): the scaled rate times the multiplier of the
// last (multiplier, start epoch) pair whose start the float epoch has reached.
double densenet_lr(const LrScheduleOptions& o, int64_t step) {
  const double scaled = o.base_learning_rate * static_cast<double>(o.train_batch_size) / 256;
  struct Stage {
    double multiplier, start_epoch;
  };
  constexpr Stage stages[] = {{1.0 / 6, 0}, {2.0 / 6, 1}, {3.0 / 6, 2}, {4.0 / 6, 3}, {5.0 / 6, 4},
                              {1.0, 5},     {0.1, 30},    {0.01, 60},   {0.001, 80},  {0.0001, 90}};
  const double epoch = current_epoch(o, step);
  double lr = scaled;
  for (const Stage& s : stages) {
    if (!(epoch < s.start_epoch)) lr = scaled * s.multiplier;
  }
  return lr;
}

// squeezenet_model.py: tf.train.polynomial_decay(init, step, decay_steps, end, power=1) from
// init_learning_rate 0.03 to end_learning_rate 0.005 (1/6 of it). Its decay_steps divides the
// run's images by num_cores_per_replica (8) times the global batch, so the decay ends after
// an eighth of the run and the rest trains at the end rate; we keep that: train_steps / 8.
double squeezenet_lr(const LrScheduleOptions& o, int64_t step) {
  const double initial = o.base_learning_rate * static_cast<double>(o.train_batch_size) / 256;
  const double end = initial / 6;
  const int64_t decay_steps = std::max<int64_t>(o.train_steps / 8, 1);
  const double done =
      static_cast<double>(std::min(step, decay_steps)) / static_cast<double>(decay_steps);
  return (initial - end) * (1 - done) + end;
}

// The kinds whose formula reads decay_epochs.
bool uses_decay_epochs(LrScheduleKind kind) {
  return kind == LrScheduleKind::inception_v3 || kind == LrScheduleKind::inception_v4 ||
         kind == LrScheduleKind::mobilenet;
}

}  // namespace

Result<LrScheduleOptions> default_lr_schedule(const std::string& model) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(model));
  const ModelRecipe& r = spec->recipe;
  LrScheduleOptions o;
  o.kind = r.lr_schedule;
  o.base_learning_rate = r.learning_rate;
  o.train_batch_size = r.train_batch_size;
  o.decay_epochs = r.learning_rate_decay_epochs;
  o.use_warmup = r.use_learning_rate_warmup;
  o.cold_epochs = r.cold_epochs;
  o.warmup_epochs = r.warmup_epochs;
  o.train_steps = r.train_steps;
  // The decay factor is a flag default of the model's (efficientnet_b0: 0.97), not a recipe field.
  for (const FlagDefault& d : spec->flag_defaults) {
    if (std::string_view(d.flag) == "learning_rate_decay")
      o.decay_rate = std::strtod(d.value, nullptr);
  }
  return o;
}

Status validate_lr_schedule(const LrScheduleOptions& o) {
  if (o.train_batch_size <= 0) return error("learning-rate schedule: train_batch_size must be > 0");
  if (o.num_train_images <= 0) return error("learning-rate schedule: num_train_images must be > 0");
  if (uses_decay_epochs(o.kind) && !(o.decay_epochs > 0)) {
    return error("learning-rate schedule: learning_rate_decay_epochs must be > 0");
  }
  if (o.kind == LrScheduleKind::inception_v3 && o.use_warmup &&
      !(o.warmup_epochs + o.decay_epochs - 1 > 0)) {
    return error("learning-rate schedule: warmup_epochs + learning_rate_decay_epochs must be > 1");
  }
  if (o.kind == LrScheduleKind::inception_v4 && !(o.warmup_epochs + o.cold_epochs > 0)) {
    return error("learning-rate schedule: warmup_epochs + cold_epochs must be > 0");
  }
  return Status();
}

double learning_rate(const LrScheduleOptions& options, int64_t global_step) {
  switch (options.kind) {
    case LrScheduleKind::inception_v4: return inception_v4_lr(options, global_step);
    case LrScheduleKind::resnet50: return resnet50_lr(options, global_step);
    case LrScheduleKind::mobilenet: return mobilenet_lr(options, global_step);
    case LrScheduleKind::efficientnet: return efficientnet_lr(options, global_step);
    case LrScheduleKind::densenet: return densenet_lr(options, global_step);
    case LrScheduleKind::squeezenet: return squeezenet_lr(options, global_step);
    case LrScheduleKind::inception_v3: break;
  }
  return inception_v3_lr(options, global_step);
}

double current_epoch(const LrScheduleOptions& options, int64_t global_step) {
  if (options.kind == LrScheduleKind::inception_v3 || options.kind == LrScheduleKind::inception_v4)
    return static_cast<double>(integer_epoch(options, global_step));
  // float32, as the reference's tf.cast(step, f32) / batches_per_epoch (ResNet, DenseNet,
  // EfficientNet; the MobileNet and SqueezeNet programs report none, so the same).
  return static_cast<double>(static_cast<float>(global_step) /
                             static_cast<float>(batches_per_epoch(options)));
}

}  // namespace ic
