#include "cli/flag.h"

namespace ic {

const char* flag_type_name(FlagType type) {
  switch (type) {
    case FlagType::boolean: return "bool";
    case FlagType::int32: return "int32";
    case FlagType::int64: return "int64";
    case FlagType::float64: return "double";
    case FlagType::string: return "string";
    case FlagType::choice: return "choice";
  }
  return "?";
}

namespace flag_entries {

bool Range::contains(double v) const {
  if (std::isnan(v)) return !low && !high;
  if (low && (low_open ? !(v > *low) : !(v >= *low))) return false;
  if (high && !(v <= *high)) return false;
  return true;
}

std::string Range::text(bool integral) const {
  if (!low && !high) return "";
  if (low && !high && !low_open && integral) return number_text(*low) + " or more";
  if (low && high && !low_open) return number_text(*low) + " to " + number_text(*high);
  std::string out;
  if (low) out = (low_open ? "> " : ">= ") + number_text(*low);
  if (high) out += (out.empty() ? "<= " : " and <= ") + number_text(*high);
  return out;
}

}  // namespace flag_entries
}  // namespace ic
