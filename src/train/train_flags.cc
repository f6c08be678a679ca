#include "train/train_flags.h"

#include <sstream>
#include <string_view>

#include "models/model_spec.h"
#include "train/flag_table.h"

namespace ic {
namespace {

bool is_help(std::string_view arg) {
  return arg == "--help" || arg == "-help" || arg == "-h" || arg == "--helpfull" ||
         arg == "-helpfull";
}

Status unknown_flag(const std::string& arg, const std::string& name) {
  const std::string nearest = nearest_trainer_flag(name);
  return error("unknown command-line flag '", arg, "'",
               nearest.empty() ? "" : " (did you mean --" + nearest + "?)",
               "; --help lists every flag");
}

// One argument (and the value after it, for --name value); `i` moves past what it used.
Status apply_flag(RunOptions& options, int argc, const char* const* argv, int& i) {
  const std::string arg = argv[i];
  const std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
  const size_t equals = body.find('=');
  const std::string name = body.substr(0, equals);
  if (const Flag* flag = find_trainer_flag(name)) {
    if (equals != std::string::npos) return flag->set(options, body.substr(equals + 1));
    if (flag->type == FlagType::boolean) return flag->set(options, "true");
    if (i + 1 < argc) return flag->set(options, argv[++i]);
    return error("flag --", name, " needs a value (--", name, "=VALUE)");
  }
  if (name.rfind("no", 0) == 0 && equals == std::string::npos) {
    const Flag* flag = find_trainer_flag(name.substr(2));
    if (flag != nullptr && flag->type == FlagType::boolean) return flag->set(options, "false");
  }
  return unknown_flag(arg, name);
}

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
  *help = false;
  for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    *help = *help || is_help(argv[i]);
  }
  if (*help) return options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argc) {
        return error("unexpected argument '", argv[i + 1],
                     "' (every setting is a --flag; --help lists them)");
      }
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return error("unexpected argument '", arg,
                   "' (every setting is a --flag; --help lists them)");
    }
    IC_RETURN_IF_ERROR(apply_flag(options, argc, argv, i));
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
