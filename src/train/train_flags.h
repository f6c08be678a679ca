// The command-line flags of inception_v3 / inception_v4 / resnet50 (gflags, defined in
// train_flags.cc) and their conversion to RunOptions.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "train/run_options.h"

namespace ic {

// The source file that defines the training flags, for parse_command_line().
inline const std::vector<std::string>& training_flag_files() {
  static const std::vector<std::string> files = {"train_flags.cc"};
  return files;
}

// Changes the flags' defaults to `model`'s recipe (inception_v4.py's defaults, ResNet-50's
// from resnet_main.py); inception_v3 keeps the v3.py defaults. Call before parsing.
Status set_model_defaults(const std::string& model);

// The current flag values.
RunOptions read_run_options(const std::string& model);

// set_model_defaults + parse + validate. `help` is set when --help was given (the caller
// prints flags_help and exits 0).
Result<RunOptions> parse_run_options(const std::string& model, int argc, const char* const* argv,
                                     bool* help);

}  // namespace ic
