// The start of every tool's main() except the trainers' (train/run_main.cc): parse only the
// tool's own flags, answer --help, refuse a bad flag or an unexpected argument with a message.
#pragma once

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "train/choices.h"
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

// The backend a tool's --device (cpu, cuda, cuda:N: the trainers' parser, so every program
// accepts the same values) and --num_threads (0 = all cores; more than the machine has is
// capped with a notice) ask for; nullopt after saying why a --device value is refused.
inline std::optional<BackendOptions> tool_backend_options(const std::string& program,
                                                          const std::string& device,
                                                          int num_threads) {
  const std::optional<DeviceChoice> choice = parse_device(device);
  // An empty value (the trainers' "decided by --use_tpu") names no device here.
  if (!choice || choice->kind == DeviceChoice::Kind::from_use_tpu) {
    std::cerr << program << ": bad value '" << device
              << "' for --device (allowed: cpu, cuda, cuda:N)" << std::endl;
    return std::nullopt;
  }
  BackendOptions backend;
  if (choice->kind == DeviceChoice::Kind::cuda) {
    backend.kind = DeviceKind::cuda;
    backend.device_index = choice->cuda_index.value_or(0);
  }
  backend.num_threads = num_threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (backend.num_threads > cores) {
    std::cerr << program << ": --num_threads=" << backend.num_threads << " is more than the "
              << cores << " cores of this machine; using " << cores << std::endl;
    backend.num_threads = cores;
  }
  return backend;
}

}  // namespace ic
