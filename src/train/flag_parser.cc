#include "train/flag_parser.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "train/command_line_syntax.h"

namespace ic {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool defined_in(const gflags::CommandLineFlagInfo& info, const std::vector<std::string>& files) {
  return std::any_of(files.begin(), files.end(),
                     [&](const std::string& file) { return ends_with(info.filename, file); });
}

std::vector<gflags::CommandLineFlagInfo> our_flags(const std::vector<std::string>& files) {
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);  // sorted by name
  std::vector<gflags::CommandLineFlagInfo> ours;
  for (auto& info : all) {
    if (defined_in(info, files)) ours.push_back(std::move(info));
  }
  return ours;
}

const char* expected_form(const std::string& type) {
  if (type == "bool") return "true or false";
  if (type == "int32" || type == "int64") return "an integer";
  if (type == "uint32" || type == "uint64") return "a non-negative integer";
  if (type == "double") return "a number";
  return "a string";
}

// Finds a flag we accept; for booleans also the --noname spelling.
bool lookup(const std::string& name, const std::vector<std::string>& files,
            gflags::CommandLineFlagInfo* info) {
  return gflags::GetCommandLineFlagInfo(name.c_str(), info) && defined_in(*info, files);
}

Status set_flag(const gflags::CommandLineFlagInfo& info, const std::string& value) {
  if (gflags::SetCommandLineOption(info.name.c_str(), value.c_str()).empty()) {
    return error("bad value '", value, "' for --", info.name, ": expected ",
                 expected_form(info.type));
  }
  return Status();
}

// gflags prints doubles with 17 digits (0.10000000000000001); users wrote 0.1.
std::string readable_value(const gflags::CommandLineFlagInfo& info, const std::string& value) {
  if (info.type != "double") return value;
  std::ostringstream out;
  out.precision(15);
  out << std::strtod(value.c_str(), nullptr);
  return out.str();
}

}  // namespace

Result<ParsedCommandLine> parse_command_line(int argc, const char* const* argv,
                                             const std::vector<std::string>& defining_files) {
  FlagSyntax syntax;
  for (const auto& info : our_flags(defining_files)) syntax.names.push_back(info.name);
  syntax.is_boolean = [&](const std::string& name) -> std::optional<bool> {
    gflags::CommandLineFlagInfo info;
    if (!lookup(name, defining_files, &info)) return std::nullopt;
    return info.type == "bool";
  };
  syntax.set = [&](const std::string& name, const std::string& value) {
    gflags::CommandLineFlagInfo info;
    return lookup(name, defining_files, &info) ? set_flag(info, value)
                                               : error("unknown command-line flag --", name);
  };
  return walk_command_line(argc, argv, syntax);
}

std::string flags_help(const ProgramHelp& program, const std::vector<std::string>& defining_files) {
  std::ostringstream out;
  out << program.name << ": " << program.about << "\n\nExample:\n  " << program.example
      << "\n\nUsage: " << program.name << " [--flag=value ...]"
      << (program.arguments.empty() ? "" : " ARGUMENTS...") << "\n";
  if (!program.arguments.empty()) out << "Arguments: " << program.arguments << "\n";
  out << "\nFlags (default in brackets):\n";
  for (const auto& info : our_flags(defining_files)) {
    out << "  --" << info.name << " (" << info.type << ") ["
        << readable_value(info, info.default_value) << "]\n      " << info.description << "\n";
  }
  return out.str();
}

std::string flags_as_text(const std::vector<std::string>& defining_files) {
  std::ostringstream out;
  bool first = true;
  for (const auto& info : our_flags(defining_files)) {
    out << (first ? "" : " ") << "--" << info.name << "="
        << readable_value(info, info.current_value);
    first = false;
  }
  return out.str();
}

}  // namespace ic
