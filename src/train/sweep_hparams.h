// TensorBoard's HParams dashboard for a sweep (`tensorboard --logdir=<sweep_dir>`): the
// experiment, in <sweep_dir>/, names the flags the variants set (with the values they take)
// and the evaluation metrics the trainers write to <variant>/model/eval; each variant is a
// session in <variant>/, with its flag values, started when the sweep first schedules it (the
// stage that trains it begins) and ended when it is finished. The dashboard then lists every
// variant with its flags and scores.
#pragma once

#include <string>

#include "core/status.h"
#include "train/sweep_config.h"

namespace ic {

// Writes the experiment unless <sweep_dir>/ has one already (TensorBoard keeps the first).
Status write_hparams_experiment(const SweepConfig& config, const std::string& sweep_dir);

// Writes the variant's session start unless <sweep_dir>/<variant>/ has one already.
Status write_hparams_session_start(const SweepConfig& config, const SweepVariant& variant,
                                   const std::string& sweep_dir);

// Writes the variant's session end (status success) in <sweep_dir>/<variant>/.
Status write_hparams_session_end(const SweepVariant& variant, const std::string& sweep_dir);

}  // namespace ic
