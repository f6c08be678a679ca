#include "cli/flag_table.h"

#include <sstream>

namespace ic {
namespace {

// `text` in lines of at most `width` characters (a longer word keeps its own line), each after
// `indent`: help that reads in an 80- or 100-column terminal.
std::string wrapped(const std::string& text, const std::string& indent, size_t width = 96) {
  std::istringstream words(text);
  std::string out, line;
  for (std::string word; words >> word;) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

}  // namespace

std::string help_text(const ProgramHelp& program, const std::vector<FlagHelp>& flags) {
  std::ostringstream out;
  out << program.name << ": " << program.about << "\n\nExample:\n  " << program.example
      << "\n\nUsage: " << program.name << " [--flag=value ...]"
      << (program.arguments.empty() ? "" : " ARGUMENTS...") << "\n";
  if (!program.arguments.empty()) out << "Arguments: " << program.arguments << "\n";
  out << "\nFlags (" << (program.defaults_of.empty() ? std::string() : program.defaults_of + "'s ")
      << "default in brackets):\n";
  for (const FlagHelp& f : flags) {
    out << "  --" << f.name << " (" << flag_type_name(f.type) << ") [" << f.value << "]\n"
        << wrapped(f.help, "      ");
    if (!f.allowed.empty()) out << wrapped("allowed: " + f.allowed, "      ");
  }
  return out.str();
}

}  // namespace ic
