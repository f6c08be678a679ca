// One command-line flag of a program whose settings are an options struct: its name, type,
// help, allowed values or range, and the member it sets. A program lists its flags once, as a
// FlagTable (flag_table.h) built from the entry makers below; parsing, validation, --help and
// flags_as_text all read those entries. The default --help shows is the member's value in the
// options the program starts from (its initializer, or a per-model default).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cli/choices.h"
#include "cli/device.h"
#include "cli/flag_values.h"
#include "core/status.h"

namespace ic {

enum class FlagType { boolean, int32, int64, float64, string, choice };
// As --help shows it: "bool", "int32", "int64", "double", "string", "choice".
const char* flag_type_name(FlagType type);

template <typename Options>
struct FlagFor {
  const char* name = "";
  FlagType type = FlagType::string;
  const char* help = "";
  std::vector<std::string> allowed;  // a choice's values, in the order --help lists them
  std::string range;                 // what values pass `check`: "1 or more", "> 0 and <= 1"
  // Parses the command line's text into the member; the error names the flag and what it
  // accepts ("bad value 'x' for --mode (allowed: train, eval, ...)").
  std::function<Status(Options&, std::string_view text)> set;
  // The member's value as the command line spells it ("0.165", "true", "RMS").
  std::function<std::string(const Options&)> get;
  // The member's range; always ok when `range` is empty.
  std::function<Status(const Options&)> check;
};

// The entry makers, each for one kind of member. A table's .cc says
// `using namespace flag_entries;` and lists `number("top_k", &O::top_k, at_least(1), "...")`.
namespace flag_entries {

// A number flag's allowed values.
struct Range {
  std::optional<double> low, high;
  bool low_open = false;  // low itself excluded

  bool contains(double v) const;
  // "1 or more" (integers), ">= 0", "> 0", "> 0 and <= 1", "0 to 1"; "" for any value.
  std::string text(bool integral) const;
};
inline Range any_value() { return {}; }
inline Range at_least(double low) { return {low, std::nullopt, false}; }
inline Range above(double low) { return {low, std::nullopt, true}; }
inline Range above_up_to(double low, double high) { return {low, high, true}; }
inline Range from_to(double low, double high) { return {low, high, false}; }

// int32_t, int64_t or double members; the value must also lie in `range`.
template <typename Options, typename T>
FlagFor<Options> number(const char* name, T Options::*member, Range range, const char* help) {
  static_assert(
      std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, double>,
      "a number flag's member is int32_t, int64_t or double");
  constexpr bool integral = std::is_integral_v<T>;
  auto text_of = [](T v) {
    if constexpr (integral) {
      return number_text(static_cast<int64_t>(v));
    } else {
      return number_text(v);
    }
  };
  FlagFor<Options> f;
  f.name = name;
  f.type = std::is_same_v<T, int32_t>   ? FlagType::int32
           : std::is_same_v<T, int64_t> ? FlagType::int64
                                        : FlagType::float64;
  f.help = help;
  f.range = range.text(integral);
  f.set = [name, member](Options& o, std::string_view text) -> Status {
    std::optional<T> value;
    if constexpr (integral) {
      if (auto v =
              parse_integer(text, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()))
        value = static_cast<T>(*v);
    } else {
      value = parse_double(text);
    }
    if (!value) {
      return error("bad value '", text, "' for --", name, ": expected ",
                   integral ? "an integer" : "a number",
                   std::is_same_v<T, int32_t> ? " (32-bit)" : "");
    }
    o.*member = *value;
    return Status();
  };
  f.get = [member, text_of](const Options& o) { return text_of(o.*member); };
  f.check = [name, member, range, text_of, allowed = f.range](const Options& o) -> Status {
    if (range.contains(static_cast<double>(o.*member))) return Status();
    return error("bad value ", text_of(o.*member), " for --", name, " (allowed: ", allowed, ")");
  };
  return f;
}

// --name, --noname, --name=true|false (parse_bool's spellings).
template <typename Options>
FlagFor<Options> boolean(const char* name, bool Options::*member, const char* help) {
  FlagFor<Options> f;
  f.name = name;
  f.type = FlagType::boolean;
  f.help = help;
  f.set = [name, member](Options& o, std::string_view text) -> Status {
    const std::optional<bool> value = parse_bool(text);
    if (!value) return error("bad value '", text, "' for --", name, ": expected true or false");
    o.*member = *value;
    return Status();
  };
  f.get = [member](const Options& o) -> std::string { return o.*member ? "true" : "false"; };
  f.check = [](const Options&) { return Status(); };
  return f;
}

// Any text, the empty one included.
template <typename Options>
FlagFor<Options> text(const char* name, std::string Options::*member, const char* help) {
  FlagFor<Options> f;
  f.name = name;
  f.type = FlagType::string;
  f.help = help;
  f.set = [member](Options& o, std::string_view value) {
    o.*member = std::string(value);
    return Status();
  };
  f.get = [member](const Options& o) { return o.*member; };
  f.check = [](const Options&) { return Status(); };
  return f;
}

// One of Choices<E>'s names (choices.h), parsed into the enum.
template <typename Options, typename E>
FlagFor<Options> choice(const char* name, E Options::*member, const char* help) {
  FlagFor<Options> f;
  f.name = name;
  f.type = FlagType::choice;
  f.help = help;
  for (const auto& c : Choices<E>::names) f.allowed.push_back(c.name);
  f.set = [name, member](Options& o, std::string_view value) -> Status {
    const std::optional<E> parsed = parse_choice<E>(value);
    if (!parsed) {
      return error("bad value '", value, "' for --", name, " (allowed: ", choice_list<E>(), ")");
    }
    o.*member = *parsed;
    return Status();
  };
  f.get = [member](const Options& o) -> std::string { return choice_name(o.*member); };
  f.check = [](const Options&) { return Status(); };  // an enum holds an allowed value
  return f;
}

// --device (device.h). The trainers accept an empty value (their --use_tpu decides); a tool,
// which has no such rule, refuses it.
enum class EmptyDevice { refused, allowed };
template <typename Options>
FlagFor<Options> device(DeviceChoice Options::*member, EmptyDevice empty, const char* help) {
  FlagFor<Options> f;
  f.name = "device";
  f.type = FlagType::string;
  f.help = help;
  f.range = empty == EmptyDevice::allowed ? "cpu, cuda, cuda:N, or empty" : "cpu, cuda, cuda:N";
  f.set = [member, empty, range = f.range](Options& o, std::string_view value) -> Status {
    const std::optional<DeviceChoice> parsed = parse_device(value);
    if (!parsed || (parsed->kind == DeviceChoice::Kind::unset && empty == EmptyDevice::refused)) {
      return error("bad value '", value, "' for --device (allowed: ", range, ")");
    }
    o.*member = *parsed;
    return Status();
  };
  f.get = [member](const Options& o) { return device_name(o.*member); };
  f.check = [](const Options&) { return Status(); };  // set() refused everything else
  return f;
}

}  // namespace flag_entries
}  // namespace ic
