// A program's flags, declared once: a FlagTable over the program's options struct, built from
// flag_entries' makers (flag.h). Parsing argv into the options, checking every value's range,
// the --help text and flags_as_text all read the table, so they cannot disagree:
//
//   struct ClassifyFlags { std::string model_dir; int32_t top_k = 5; };
//   const FlagTable<ClassifyFlags>& classify_flags() {
//     using namespace flag_entries;
//     using O = ClassifyFlags;
//     static const FlagTable<O> table({
//         text("model_dir", &O::model_dir, "Directory whose latest checkpoint is used"),
//         number("top_k", &O::top_k, at_least(1), "Classes printed per input"),
//     });
//     return table;
//   }
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/command_line_syntax.h"
#include "cli/flag.h"
#include "core/status.h"

namespace ic {

// What --help says about a program before its flags.
struct ProgramHelp {
  std::string name;            // "classify"
  std::string about;           // one line: what the program does
  std::string example;         // a command that works as written (placeholders in capitals)
  std::string arguments = "";  // what positional arguments are; empty when there are none
  // Whose defaults the brackets show ("inception_v4": each trainer has its own); empty: the
  // program's.
  std::string defaults_of = "";
};

// One flag as --help lists it.
struct FlagHelp {
  const char* name;
  FlagType type;
  std::string value;  // the default, as the command line spells it
  const char* help;
  std::string allowed;  // range and choices; empty when any value goes
};

// "<name>: <about>", the example, the usage line, then every flag in the given order:
//   --name (type) [default]
//       help, wrapped at 96 columns
//       allowed: ...
std::string help_text(const ProgramHelp& program, const std::vector<FlagHelp>& flags);

template <typename Options>
class FlagTable {
 public:
  using Flag = FlagFor<Options>;

  // `flags` in declaration order; names are unique (tests check each table).
  explicit FlagTable(std::vector<Flag> flags) : flags_(std::move(flags)) {
    for (const Flag& f : flags_) by_name_.push_back(&f);
    std::sort(by_name_.begin(), by_name_.end(),
              [](const Flag* a, const Flag* b) { return std::string_view(a->name) < b->name; });
  }
  FlagTable(const FlagTable&) = delete;  // by_name_ points into flags_
  FlagTable& operator=(const FlagTable&) = delete;

  // In declaration order.
  const std::vector<Flag>& flags() const { return flags_; }
  // Sorted by name, as --help and flags_as_text list them.
  const std::vector<const Flag*>& by_name() const { return by_name_; }
  const Flag* find(std::string_view name) const {
    for (const Flag& f : flags_) {
      if (name == f.name) return &f;
    }
    return nullptr;
  }

  // Sets each flag of argv[1..] (command_line_syntax.h) in `options`, which holds the defaults;
  // stops at the first error. Ranges are not checked here (validate): a value may be the
  // program's business between parsing and validation (a trainer's per-model rules).
  Result<WalkedCommandLine> parse(int argc, const char* const* argv, Options& options) const {
    FlagSyntax syntax;
    for (const Flag& f : flags_) syntax.names.push_back(f.name);
    syntax.is_boolean = [this](const std::string& name) -> std::optional<bool> {
      const Flag* flag = find(name);
      if (flag == nullptr) return std::nullopt;
      return flag->type == FlagType::boolean;
    };
    syntax.set = [this, &options](const std::string& name, const std::string& value) {
      const Flag* flag = find(name);
      return flag != nullptr ? flag->set(options, value)
                             : error("unknown command-line flag --", name);
    };
    return walk_command_line(argc, argv, syntax);
  }

  // Every value within its flag's range; the first that is not, named with its allowed values.
  Status validate(const Options& options) const {
    for (const Flag& f : flags_) IC_RETURN_IF_ERROR(f.check(options));
    return Status();
  }

  // The program's --help, the brackets showing `defaults`' values.
  std::string help(const ProgramHelp& program, const Options& defaults) const {
    std::vector<FlagHelp> lines;
    for (const Flag* f : by_name_) {
      std::string allowed = f->range;
      for (const std::string& a : f->allowed) allowed += (allowed.empty() ? "" : ", ") + a;
      lines.push_back({f->name, f->type, f->get(defaults), f->help, allowed});
    }
    return help_text(program, lines);
  }

 private:
  std::vector<Flag> flags_;
  std::vector<const Flag*> by_name_;
};

// "--name=value" for every flag, by name, space-separated: text the table's parser reads back
// to the same options (the trainers record it in checkpoint metadata).
template <typename Options>
std::string flags_as_text(const FlagTable<Options>& table, const Options& options) {
  std::string out;
  for (const FlagFor<Options>* f : table.by_name()) {
    out += (out.empty() ? "--" : " --") + std::string(f->name) + "=" + f->get(options);
  }
  return out;
}

}  // namespace ic
