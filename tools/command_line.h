// The start of every tool's main() except the trainers' (train/run_main.cc): parse only the
// tool's own flags, answer --help, refuse a bad flag or an unexpected argument with a message.
#pragma once

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "train/flag_parser.h"

namespace ic {

// Returns the exit code to stop with (0 after --help, 2 for a bad command line), or nullopt
// to go on. `arguments` receives the positional arguments; when it is null there must be none.
inline std::optional<int> start_tool(const ProgramHelp& help,
                                     const std::vector<std::string>& flag_files, int argc,
                                     char** argv, std::vector<std::string>* arguments = nullptr) {
  Result<ParsedCommandLine> parsed = parse_command_line(argc, argv, flag_files);
  if (!parsed.ok()) {
    std::cerr << help.name << ": " << parsed.status().message() << " (--help lists the flags)"
              << std::endl;
    return 2;
  }
  if (parsed->help) {
    std::cout << flags_help(help, flag_files);
    return 0;
  }
  if (arguments != nullptr) {
    *arguments = std::move(parsed->positional);
  } else if (!parsed->positional.empty()) {
    std::cerr << help.name << ": unexpected argument '" << parsed->positional.front()
              << "' (every setting is a --flag; --help lists them)" << std::endl;
    return 2;
  }
  return std::nullopt;
}

}  // namespace ic
