#include "http/message.h"

namespace ic::http {

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view Request::path() const {
  const std::string_view t = target;
  return t.substr(0, t.find('?'));
}

std::string_view Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (same_name(key, name)) return value;
  }
  return {};
}

std::string_view reason_phrase(int status) {
  struct Reason {
    int status;
    std::string_view phrase;
  };
  // RFC 9110's reason phrases, word for word.
  static constexpr Reason kReasons[] = {
      {100, "Continue"},
      {200, "OK"},
      {204, "No Content"},
      {400, "Bad Request"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {409, "Conflict"},
      {411, "Length Required"},
      {413, "Content Too Large"},
      {414, "URI Too Long"},
      {417, "Expectation Failed"},
      {429, "Too Many Requests"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
      {505, "HTTP Version Not Supported"},
  };
  for (const Reason& r : kReasons) {
    if (r.status == status) return r.phrase;
  }
  return {};
}

}  // namespace ic::http
