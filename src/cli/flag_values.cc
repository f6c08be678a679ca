#include "cli/flag_values.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace ic {

std::optional<bool> parse_bool(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* yes : {"true", "t", "yes", "y", "1"}) {
    if (lower == yes) return true;
  }
  for (const char* no : {"false", "f", "no", "n", "0"}) {
    if (lower == no) return false;
  }
  return std::nullopt;
}

std::optional<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max) {
  const std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return std::nullopt;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, hex ? 16 : 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<double> parse_double(std::string_view text) {
  const std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno == ERANGE || *end != '\0') return std::nullopt;
  return v;
}

std::string number_text(double value) {
  std::ostringstream out;
  out.precision(15);
  out << value;
  return out.str();
}

std::string number_text(int64_t value) { return std::to_string(value); }

}  // namespace ic
