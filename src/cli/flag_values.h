// A flag's value as text and back: what the parser accepts for each type, and the spelling
// --help, messages and flags_as_text write (which the parser reads back).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ic {

// true/false in any case, also t/f, yes/no, y/n, 1/0: the spellings the programs have always
// accepted, so every command line that worked still does (Python's True/False included).
std::optional<bool> parse_bool(std::string_view text);

// A decimal (or 0x hexadecimal) integer within [min, max], nothing before or after it.
std::optional<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max);

// A number as strtod reads it (nan and inf included; ranges refuse them), nothing after it.
std::optional<double> parse_double(std::string_view text);

// 0.165, 4e-05, 1024: what a user would have typed (not 0.16500000000000001).
std::string number_text(double value);
std::string number_text(int64_t value);

}  // namespace ic
