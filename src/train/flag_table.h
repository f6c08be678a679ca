// The trainers' flags (inception_v3, inception_v4, resnet50), each declared once in
// flag_table.cc: name, type, help, allowed values or range, and the RunOptions member it sets.
// Parsing (train_flags.h), validation (validate_run_options), --help and the flags recorded in
// checkpoint metadata all read this table; a flag's default is RunOptions' initializer, changed
// per model by the model registry (default_run_options). Adding a flag is one entry in
// trainer_flags() plus its RunOptions member (src/train/README.md shows one).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "train/run_options.h"

namespace ic {

enum class FlagType { boolean, int32, int64, float64, string, choice };
// As --help shows it: "bool", "int32", "int64", "double", "string", "choice".
const char* flag_type_name(FlagType type);

struct Flag {
  const char* name = "";
  FlagType type = FlagType::string;
  const char* help = "";
  std::vector<std::string> allowed;  // a choice's values, in the order --help lists them
  std::string range;                 // what values pass `check`: "1 or more", "> 0 and <= 1"
  // Parses the command line's text into the member; the error names the flag and what it
  // accepts ("bad value 'x' for --mode (allowed: train, eval, ...)").
  std::function<Status(RunOptions&, std::string_view text)> set;
  // The member's value as the command line spells it ("0.165", "true", "RMS").
  std::function<std::string(const RunOptions&)> get;
  // The member's range (part of validate_run_options); always ok when `range` is empty.
  std::function<Status(const RunOptions&)> check;
};

// Every flag, in declaration order (the reference's first, then ours).
const std::vector<Flag>& trainer_flags();
// The same flags sorted by name, as --help and the checkpoint metadata list them.
const std::vector<const Flag*>& trainer_flags_by_name();
const Flag* find_trainer_flag(std::string_view name);

// RunOptions' defaults with `model`'s from the registry (its recipe, image size, classes and
// flag_defaults: inception_v4.py's and resnet_main.py's values; inception_v3 keeps v3.py's).
Result<RunOptions> default_run_options(const std::string& model);

// "--name=value" for every flag, by name, space-separated (the checkpoint metadata's "flags").
std::string flags_as_text(const RunOptions& options);

}  // namespace ic
