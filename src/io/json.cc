#include "io/json.h"

#include <charconv>
#include <cstdio>

namespace ic {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<JsonValue> parse_document() {
    JsonValue value;
    IC_RETURN_IF_ERROR(parse_value(&value, 0));
    skip_space();
    if (pos_ != text_.size()) return fail("unexpected text after the value");
    return value;
  }

 private:
  Status fail(const std::string& what) const {
    return data_loss("JSON error at byte ", pos_, ": ", what);
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status parse_value(JsonValue* out, int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than 64 levels");
    skip_space();
    if (pos_ >= text_.size()) return fail("unexpected end of text");
    const char c = text_[pos_];
    if (c == '{') return parse_object(out, depth);
    if (c == '[') return parse_array(out, depth);
    if (c == '"') {
      out->kind = JsonValue::Kind::string;
      return parse_string(&out->text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
    if (consume("true")) {
      out->kind = JsonValue::Kind::boolean;
      out->boolean = true;
      return Status();
    }
    if (consume("false")) {
      out->kind = JsonValue::Kind::boolean;
      return Status();
    }
    if (consume("null")) {
      out->kind = JsonValue::Kind::null;
      return Status();
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  Status parse_object(JsonValue* out, int depth) {
    out->kind = JsonValue::Kind::object;
    ++pos_;  // '{'
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return Status();
    }
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a member name");
      std::string key;
      IC_RETURN_IF_ERROR(parse_string(&key));
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      JsonValue value;
      IC_RETURN_IF_ERROR(parse_value(&value, depth + 1));
      out->members.emplace_back(std::move(key), std::move(value));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return Status();
      }
      return fail("expected ',' or '}'");
    }
  }

  Status parse_array(JsonValue* out, int depth) {
    out->kind = JsonValue::Kind::array;
    ++pos_;  // '['
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Status();
    }
    while (true) {
      JsonValue value;
      IC_RETURN_IF_ERROR(parse_value(&value, depth + 1));
      out->items.push_back(std::move(value));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return Status();
      }
      return fail("expected ',' or ']'");
    }
  }

  Status parse_number(JsonValue* out) {
    out->kind = JsonValue::Kind::number;
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (text_[pos_] == '-') ++pos_;
    if (digits() == 0) return fail("malformed number");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) return fail("malformed number");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) return fail("malformed number");
    }
    out->text = std::string(text_.substr(start, pos_ - start));
    return Status();
  }

  Result<uint32_t> parse_hex4() {
    if (pos_ + 4 > text_.size()) return fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<uint32_t>(h - 'A' + 10);
      else
        return fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  Status parse_string(std::string* out) {
    ++pos_;  // opening quote
    while (true) {
      if (pos_ >= text_.size()) return fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return Status();
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          IC_ASSIGN_OR_RETURN(uint32_t cp, parse_hex4());
          if (cp >= 0xd800 && cp < 0xdc00) {  // high surrogate: a low one must follow
            if (!consume("\\u")) return fail("unpaired surrogate in \\u escape");
            IC_ASSIGN_OR_RETURN(const uint32_t low, parse_hex4());
            if (low < 0xdc00 || low >= 0xe000) return fail("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            return fail("unpaired surrogate in \\u escape");
          }
          append_utf8(cp, out);
          break;
        }
        default: return fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue::JsonValue() = default;

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::optional<int64_t> JsonValue::as_int64() const {
  if (kind != Kind::number || text.empty()) return std::nullopt;
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) i = 1;
  if (i == text.size()) return std::nullopt;
  // Accumulate negatively so INT64_MIN fits.
  int64_t value = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return std::nullopt;  // fraction or exponent
    const int digit = c - '0';
    if (value < (INT64_MIN + digit) / 10) return std::nullopt;
    value = value * 10 - digit;
  }
  if (!negative) {
    if (value == INT64_MIN) return std::nullopt;
    value = -value;
  }
  return value;
}

Result<JsonValue> parse_json(std::string_view text) { return Parser(text).parse_document(); }

std::string json_number(double value) {
  char text[64];
  const auto written = std::to_chars(text, text + sizeof text, value);
  return std::string(text, written.ptr);
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace ic
