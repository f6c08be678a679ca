// The start of every tool's main() except the trainers' (train/run_main.cc): parse the tool's
// flags through its table (cli/flag_table.h), answer --help, refuse a bad flag, a value out of
// range or an unexpected argument with a message; and the backend its --device and
// --num_threads ask for. The messages and exit codes are decided here, at the edge.
#pragma once

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/backend_options.h"
#include "cli/flag_table.h"

namespace ic {

// Fills `options` (from Options' defaults) from argv. Returns the exit code to stop with (0
// after --help, 2 for a bad command line), or nullopt to go on. `arguments` receives the
// positional arguments; when it is null there must be none.
template <typename Options>
std::optional<int> start_tool(const ProgramHelp& help, const FlagTable<Options>& flags, int argc,
                              char** argv, Options* options,
                              std::vector<std::string>* arguments = nullptr) {
  *options = Options{};
  Result<WalkedCommandLine> parsed = flags.parse(argc, argv, *options);
  if (!parsed.ok()) {
    std::cerr << help.name << ": " << parsed.status().message() << " (--help lists the flags)"
              << std::endl;
    return 2;
  }
  if (parsed->help) {
    std::cout << flags.help(help, Options{});
    return 0;
  }
  if (arguments != nullptr) {
    *arguments = std::move(parsed->positional);
  } else if (const Status none = expect_no_arguments(*parsed); !none.ok()) {
    std::cerr << help.name << ": " << none.message() << std::endl;
    return 2;
  }
  if (const Status valid = flags.validate(*options); !valid.ok()) {
    std::cerr << help.name << ": " << valid.message() << std::endl;
    return 2;
  }
  return std::nullopt;
}

// The backend a tool's --device and --num_threads ask for (cli/backend_options.h), saying so on
// stderr when the thread count was capped; nullopt after saying why it cannot be had.
inline std::optional<BackendOptions> tool_backend_options(const std::string& program,
                                                          const DeviceChoice& device,
                                                          int num_threads) {
  const Result<BackendChoice> chosen = backend_options_for(device, num_threads);
  if (!chosen.ok()) {
    std::cerr << program << ": " << chosen.status().message() << std::endl;
    return std::nullopt;
  }
  if (!chosen->notice.empty()) std::cerr << program << ": " << chosen->notice << std::endl;
  return chosen->options;
}

}  // namespace ic
