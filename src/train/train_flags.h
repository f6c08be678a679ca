// The command line of inception_v3 / inception_v4 / resnet50: argv into RunOptions and the
// --help text, both from the flag table (train/flag_table.h) through cli/'s parser: the trainers
// accept exactly the table's flags.
#pragma once

#include <string>

#include "core/status.h"
#include "train/run_options.h"

namespace ic {

// `model`'s defaults (default_run_options), then argv, then validate_run_options. The syntax is
// every program's (cli/command_line_syntax.h); booleans take True/False in any case, also t/f,
// yes/no, 1/0. An unknown flag's error names it and the nearest flag. `help` is set when --help
// (-h, --helpfull) was given: then nothing is validated and the caller prints trainer_help and
// exits 0.
Result<RunOptions> parse_run_options(const std::string& model, int argc, const char* const* argv,
                                     bool* help);

// "<model>: <what it trains>", an example command, then every flag by name with its type,
// default (this model's), allowed values or range, and help.
Result<std::string> trainer_help(const std::string& model);

}  // namespace ic
