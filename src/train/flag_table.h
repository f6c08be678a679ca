// The trainers' flags (inception_v3, inception_v4, resnet50), each declared once in
// flag_table.cc as an entry of a FlagTable over RunOptions (cli/flag_table.h): name, type, help,
// allowed values or range, and the RunOptions member it sets. Parsing (train_flags.h),
// validation (validate_run_options), --help and the flags recorded in checkpoint metadata all
// read this table; a flag's default is RunOptions' initializer, changed per model by the model
// registry (default_run_options). Adding a flag is one entry in the table plus its RunOptions
// member (src/train/README.md shows one).
#pragma once

#include <string>
#include <vector>

#include "cli/flag_table.h"
#include "core/status.h"
#include "train/run_options.h"

namespace ic {

// A trainer flag.
using Flag = FlagFor<RunOptions>;

const FlagTable<RunOptions>& trainer_flag_table();
// Every flag, in declaration order (the reference's first, then ours).
const std::vector<Flag>& trainer_flags();

// RunOptions' defaults with `model`'s from the registry (its recipe, image size, classes and
// flag_defaults: inception_v4.py's and resnet_main.py's values; inception_v3 keeps v3.py's).
Result<RunOptions> default_run_options(const std::string& model);

// "--name=value" for every flag, by name, space-separated (the checkpoint metadata's "flags").
std::string flags_as_text(const RunOptions& options);

}  // namespace ic
