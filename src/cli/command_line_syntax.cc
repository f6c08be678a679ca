#include "cli/command_line_syntax.h"

#include <algorithm>
#include <string>

namespace ic {
namespace {

// Levenshtein distance, one row at a time.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_flag_name(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_distance = 0;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (best == nullptr || d < best_distance) {
      best = &candidate;
      best_distance = d;
    }
  }
  const size_t tolerance = std::max<size_t>(2, name.size() / 4);
  return best != nullptr && best_distance <= tolerance ? *best : "";
}

namespace {

bool is_help(const std::string& arg) {
  for (const char* help : {"--help", "-help", "-h", "--h", "--helpfull", "-helpfull"}) {
    if (arg == help) return true;
  }
  return false;
}

}  // namespace

Result<WalkedCommandLine> walk_command_line(int argc, const char* const* argv,
                                            const FlagSyntax& flags) {
  WalkedCommandLine walked;
  // Help wins over everything else on the line, a bad flag included.
  for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    if (is_help(argv[i])) {
      walked.help = true;
      return walked;
    }
  }
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      walked.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    const std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t equals = body.find('=');
    const std::string name = body.substr(0, equals);
    if (const std::optional<bool> boolean = flags.is_boolean(name)) {
      if (equals != std::string::npos) {
        IC_RETURN_IF_ERROR(flags.set(name, body.substr(equals + 1)));
      } else if (*boolean) {
        IC_RETURN_IF_ERROR(flags.set(name, "true"));
      } else if (i + 1 < argc) {
        IC_RETURN_IF_ERROR(flags.set(name, argv[++i]));
      } else {
        return error("flag --", name, " needs a value (--", name, "=VALUE)");
      }
      continue;
    }
    if (equals == std::string::npos && name.rfind("no", 0) == 0 &&
        flags.is_boolean(name.substr(2)).value_or(false)) {
      IC_RETURN_IF_ERROR(flags.set(name.substr(2), "false"));
      continue;
    }
    const std::string nearest = nearest_flag_name(name, flags.names);
    return error("unknown command-line flag '", arg, "'",
                 nearest.empty() ? "" : " (did you mean --" + nearest + "?)");
  }
  return walked;
}

Status expect_no_arguments(const WalkedCommandLine& walked) {
  if (walked.positional.empty()) return Status();
  return error("unexpected argument '", walked.positional.front(),
               "' (every setting is a --flag; --help lists them)");
}

}  // namespace ic
