// Command-line parsing over the gflags registry, with errors as values. gflags' own parser
// exits the process on an unknown flag; ours returns a Status naming the flag, so the
// program (and tests) decide what happens. Only flags defined in the given source files are
// accepted, so a program does not pick up another program's flags or gflags' internals.
// The trainers do not use it: their flags are a table of their own (train/flag_table.h).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "train/command_line_syntax.h"

namespace ic {

// The positional arguments and whether help was asked for, as the shared walk reports them.
using ParsedCommandLine = WalkedCommandLine;

// Accepts --name=value, --name value, -name=value, and for booleans --name, --noname and
// --name=True/False (any case). "--" ends the flags. Sets each flag's value in the registry.
Result<ParsedCommandLine> parse_command_line(int argc, const char* const* argv,
                                             const std::vector<std::string>& defining_files);

// What --help says about a program before its flags.
struct ProgramHelp {
  std::string name;       // "classify"
  std::string about;      // one line: what the program does
  std::string example;    // a command that works as written (placeholders in capitals)
  std::string arguments;  // what positional arguments are, empty when there are none
};

// The program's help: "<name>: <about>", an example command, then every flag defined in
// `defining_files` (and no other: not the flag library's own), sorted by name, with its type,
// default and help.
std::string flags_help(const ProgramHelp& program, const std::vector<std::string>& defining_files);

// "name=value" for every flag defined in `defining_files` (for checkpoint metadata).
std::string flags_as_text(const std::vector<std::string>& defining_files);

}  // namespace ic
