// The command-line syntax every program accepts: --name=value, --name value, -name=value; for
// booleans also --name, --noname and --name=True/False; "--" ends the flags; --help, -h and
// --helpfull ask for help. An unknown flag is refused naming it and the nearest known one.
// FlagTable::parse (flag_table.h) walks argv with it; nothing here knows an options struct.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ic {

// A program's flags as the walk sees them.
struct FlagSyntax {
  // Every flag name (for "did you mean").
  std::vector<std::string> names;
  // Whether `name` is a boolean flag (which takes no separate value); nullopt: no such flag.
  std::function<std::optional<bool>(const std::string& name)> is_boolean;
  // Sets flag `name` from its text; the error names the flag and what it accepts.
  std::function<Status(const std::string& name, const std::string& value)> set;
};

struct WalkedCommandLine {
  std::vector<std::string> positional;  // arguments that are not flags, in order
  bool help = false;  // asked for help: then no flag was set and nothing else is known
};

// Sets every flag of argv[1..] through `flags`; stops at the first error.
Result<WalkedCommandLine> walk_command_line(int argc, const char* const* argv,
                                            const FlagSyntax& flags);

// For a program that takes no positional arguments: the first one refused, saying every
// setting is a --flag.
Status expect_no_arguments(const WalkedCommandLine& walked);

// The candidate within a few edits (insertions, deletions, substitutions) of `name`, the
// nearest first in `candidates`' order; "" when none is that close (a different word, not a
// slip of the keyboard).
std::string nearest_flag_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace ic
