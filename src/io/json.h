// A small JSON reader and string quoting, enough for safetensors headers (objects, arrays,
// strings, integers). Numbers keep their literal text so 64-bit offsets stay exact.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ic {

struct JsonValue {
  // Defined in json.cc, where std::pair<std::string, JsonValue> is complete: clang with
  // libstdc++ cannot check an inline one while JsonValue is still being defined.
  JsonValue();

  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;              // a string's decoded contents, or a number's literal
  std::vector<JsonValue> items;  // array
  std::vector<std::pair<std::string, JsonValue>> members;  // object, in document order

  const JsonValue* find(std::string_view key) const;  // first member named key, or nullptr
  // The value of an integer literal (no fraction or exponent) that fits in int64.
  std::optional<int64_t> as_int64() const;
};

// Parses one JSON value surrounded by optional whitespace. Errors give the byte offset.
// Nesting deeper than 64 levels is rejected (the input may be hostile).
Result<JsonValue> parse_json(std::string_view text);

// `value` (finite) as the shortest JSON number that reads back as the same double, so that a
// score written and read again compares equal.
std::string json_number(double value);

// `s` as a JSON string literal, quotes included (escapes ", \ and control characters).
std::string json_quote(std::string_view s);

}  // namespace ic
