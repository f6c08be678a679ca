#include "train/train_flags.h"

#include <sstream>
#include <string_view>

#include "models/model_spec.h"
#include "train/command_line_syntax.h"
#include "train/flag_table.h"

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

Result<RunOptions> parse_run_options(const std::string& model, int argc, const char* const* argv,
                                     bool* help) {
  IC_ASSIGN_OR_RETURN(RunOptions options, default_run_options(model));
  FlagSyntax syntax;
  for (const Flag& f : trainer_flags()) syntax.names.push_back(f.name);
  syntax.is_boolean = [](const std::string& name) -> std::optional<bool> {
    const Flag* flag = find_trainer_flag(name);
    if (flag == nullptr) return std::nullopt;
    return flag->type == FlagType::boolean;
  };
  syntax.set = [&options](const std::string& name, const std::string& value) {
    const Flag* flag = find_trainer_flag(name);
    return flag != nullptr ? flag->set(options, value)
                           : error("unknown command-line flag --", name);
  };
  IC_ASSIGN_OR_RETURN(const WalkedCommandLine walked, walk_command_line(argc, argv, syntax));
  *help = walked.help;
  if (walked.help) return options;
  if (!walked.positional.empty()) {
    return error("unexpected argument '", walked.positional.front(),
                 "' (every setting is a --flag; --help lists them)");
  }
  IC_RETURN_IF_ERROR(validate_run_options(options));
  return options;
}

Result<std::string> trainer_help(const std::string& model) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(model));
  IC_ASSIGN_OR_RETURN(const RunOptions defaults, default_run_options(model));
  std::ostringstream out;
  out << model << ": " << spec->about << "\n\nExample:\n  " << model
      << " --mode=train_and_eval --data_dir=TFRECORD_DIR --model_dir=MODEL_DIR"
         "   (or --use_data=fake)\n\nUsage: "
      << model << " [--flag=value ...]\n\nFlags (" << model << "'s default in brackets):\n";
  for (const Flag* f : trainer_flags_by_name()) {
    out << "  --" << f->name << " (" << flag_type_name(f->type) << ") [" << f->get(defaults)
        << "]\n"
        << wrapped(f->help, "      ");
    std::string allowed = f->range;
    for (const std::string& a : f->allowed) allowed += (allowed.empty() ? "" : ", ") + a;
    if (!allowed.empty()) out << wrapped("allowed: " + allowed, "      ");
  }
  return out.str();
}

}  // namespace ic
