#include "http/request_parser.h"

#include <algorithm>

namespace ic::http {
namespace {

// RFC 9110's tchar: the characters of a token (method, header name, transfer coding).
bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(c); });
}

// A field value's characters: visible ASCII, obs-text, space and tab; no other control.
bool is_field_value(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || c >= 0x20 ? c != 0x7f : false;
  });
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The line without its CRLF or LF.
std::string_view strip_eol(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool ieq(std::string_view a, std::string_view b) { return same_name(a, b); }

// Calls f on each comma-separated, trimmed element of a list header value.
template <typename F>
void for_each_element(std::string_view value, F f) {
  while (true) {
    const size_t comma = value.find(',');
    f(trim_ows(value.substr(0, comma)));
    if (comma == std::string_view::npos) return;
    value.remove_prefix(comma + 1);
  }
}

// Content-Length's 1*DIGIT; false for anything else and for more than 18 digits.
bool parse_length(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  uint64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = value;
  return true;
}

constexpr size_t kMaxChunkLine = 1024;  // a chunk-size line with its extensions

}  // namespace

bool RequestParser::fail(int status, std::string message) {
  state_ = State::failed;
  error_status_ = status;
  error_message_ = std::move(message);
  return false;
}

void RequestParser::reset() {
  const ParserLimits limits = limits_;
  *this = RequestParser(limits);
}

size_t RequestParser::feed(std::string_view data) {
  size_t used = 0;
  while (used < data.size() && (state_ == State::reading_head || state_ == State::reading_body)) {
    const std::string_view rest = data.substr(used);
    used += state_ == State::reading_head ? feed_head(rest) : feed_body(rest);
  }
  return used;
}

size_t RequestParser::feed_head(std::string_view data) {
  size_t skipped = 0;
  if (!started_) {  // blank lines before a request line are ignored (RFC 9112 2.2)
    while (skipped < data.size() && (data[skipped] == '\r' || data[skipped] == '\n')) ++skipped;
    if (skipped == data.size()) return skipped;
    started_ = true;
  }
  data.remove_prefix(skipped);
  const size_t old_size = head_.size();
  // Never hold more than the limit (+1 to tell "exactly at the limit" from "over it").
  const size_t room = limits_.max_header_bytes + 1 - std::min(old_size, limits_.max_header_bytes);
  const size_t take = std::min(data.size(), room);
  head_.append(data.substr(0, take));
  for (size_t j = old_size >= 2 ? old_size - 2 : 0; j + 1 < head_.size(); ++j) {
    if (head_[j] != '\n') continue;
    size_t end = 0;
    if (head_[j + 1] == '\n') end = j + 2;
    if (head_[j + 1] == '\r' && j + 2 < head_.size() && head_[j + 2] == '\n') end = j + 3;
    if (end == 0) continue;
    if (end > limits_.max_header_bytes) break;
    head_.resize(end);
    parse_head();
    return skipped + (end - old_size);
  }
  if (head_.size() > limits_.max_header_bytes) {
    fail(431, "the request's head is over " + std::to_string(limits_.max_header_bytes) + " bytes");
  }
  return skipped + take;
}

bool RequestParser::parse_head() {
  std::string_view rest = head_;
  bool first = true;
  while (!rest.empty()) {
    const size_t eol = rest.find('\n');
    const std::string_view line = strip_eol(rest.substr(0, eol + 1));
    rest.remove_prefix(eol + 1);
    if (line.find('\r') != std::string_view::npos) {
      return fail(400, "a bare CR in the request's head");
    }
    if (first) {
      if (!parse_request_line(line)) return false;
      first = false;
    } else if (line.empty()) {
      break;
    } else if (!parse_header_line(line)) {
      return false;
    }
  }
  head_.clear();
  head_.shrink_to_fit();
  return apply_framing();
}

bool RequestParser::parse_request_line(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return fail(400, "the request line is not 'METHOD TARGET HTTP/1.1'");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return fail(400, "the request method is not a token");
  if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) {
        return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
      })) {
    return fail(400, "the request target is empty or has a control or non-ASCII character");
  }
  if (version == "HTTP/1.1") {
    request_.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    request_.minor_version = 0;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[6] == '.') {
    return fail(505, "HTTP version " + std::string(version.substr(5)) +
                         " (this server speaks 1.0 and 1.1)");
  } else {
    return fail(400, "the request line's version is not HTTP/1.x");
  }
  request_.method = method;
  request_.target = target;
  return true;
}

bool RequestParser::parse_header_line(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    return fail(400, "a header line continued on the next line (obs-fold)");
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return fail(400, "a header line without a colon");
  const std::string_view name = line.substr(0, colon);
  if (name.back() == ' ' || name.back() == '\t') {
    return fail(400, "whitespace between a header name and its colon");
  }
  if (!is_token(name)) return fail(400, "a header name that is not a token");
  const std::string_view value = trim_ows(line.substr(colon + 1));
  if (!is_field_value(value))
    return fail(400, "a control character in header " + std::string(name));
  if (request_.headers.size() >= limits_.max_headers) {
    return fail(431, "more than " + std::to_string(limits_.max_headers) + " header lines");
  }
  request_.headers.emplace_back(name, value);
  return true;
}

bool RequestParser::apply_framing() {
  int hosts = 0;
  bool chunked = false, has_length = false, has_te = false;
  uint64_t length = 0;
  request_.keep_alive = request_.minor_version == 1;
  for (const auto& [name, value] : request_.headers) {
    if (ieq(name, "Host")) {
      ++hosts;
    } else if (ieq(name, "Content-Length")) {
      uint64_t v = 0;
      if (!parse_length(value, &v)) {
        return fail(400, "Content-Length '" + value + "' is not a decimal number of bytes");
      }
      if (has_length && v != length) return fail(400, "two different Content-Length headers");
      has_length = true;
      length = v;
    } else if (ieq(name, "Transfer-Encoding")) {
      if (has_te) return fail(400, "Transfer-Encoding given twice");
      has_te = true;
      chunked = ieq(value, "chunked");
      if (!chunked) return fail(501, "Transfer-Encoding '" + value + "' (only chunked is taken)");
    } else if (ieq(name, "Connection")) {
      for_each_element(value, [&](std::string_view option) {
        if (ieq(option, "close")) request_.keep_alive = false;
        if (ieq(option, "keep-alive") && request_.minor_version == 0) request_.keep_alive = true;
      });
    } else if (ieq(name, "Expect")) {
      if (!ieq(value, "100-continue"))
        return fail(417, "Expect: " + value + " (only 100-continue)");
      expects_continue_ = true;
    }
  }
  if (request_.minor_version == 1 && hosts != 1) {
    return fail(400, hosts == 0 ? "an HTTP/1.1 request without Host" : "Host given twice");
  }
  if (has_te && has_length) return fail(400, "both Content-Length and Transfer-Encoding");
  if (has_te && request_.minor_version == 0) return fail(400, "Transfer-Encoding in HTTP/1.0");
  if (has_length && length > limits_.max_body_bytes) {
    return fail(413, "the request body of " + std::to_string(length) +
                         " bytes is larger than the server's limit of " +
                         std::to_string(limits_.max_body_bytes) + " bytes");
  }
  const std::string& m = request_.method;
  if (!has_length && !chunked && (m == "POST" || m == "PUT" || m == "PATCH")) {
    return fail(411, "a " + m + " without Content-Length or Transfer-Encoding: chunked");
  }
  if (chunked) {
    declared_length_ = -1;
    body_ = Body::chunk_size;
    state_ = State::reading_body;
  } else if (length > 0) {
    declared_length_ = static_cast<int64_t>(length);
    remaining_ = length;
    body_ = Body::length;
    state_ = State::reading_body;
  } else {
    expects_continue_ = false;  // nothing to continue with
    state_ = State::complete;
  }
  return true;
}

bool RequestParser::parse_chunk_size(std::string_view line) {
  size_t digits = 0;
  uint64_t size = 0;
  for (; digits < line.size(); ++digits) {
    const char c = line[digits];
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    if (v < 0) break;
    if (digits == 15) return fail(400, "a chunk size over 15 hex digits");
    size = size * 16 + static_cast<uint64_t>(v);
  }
  const std::string_view ext = trim_ows(line.substr(digits));
  if (digits == 0 || (!ext.empty() && (ext.front() != ';' || !is_field_value(ext)))) {
    return fail(400, "a chunk size line that is not hex digits [; extensions]");
  }
  if (size == 0) {
    body_ = Body::trailers;
    return true;
  }
  if (request_.body.size() + size > limits_.max_body_bytes) {
    return fail(413, "the chunked request body is larger than the server's limit of " +
                         std::to_string(limits_.max_body_bytes) + " bytes");
  }
  remaining_ = size;
  body_ = Body::chunk_data;
  return true;
}

size_t RequestParser::feed_body(std::string_view data) {
  if (body_ == Body::length || body_ == Body::chunk_data) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
    request_.body.append(data.substr(0, take));
    remaining_ -= take;
    if (remaining_ == 0) {
      if (body_ == Body::length) state_ = State::complete;
      body_ = body_ == Body::length ? Body::none : Body::chunk_end;
    }
    return take;
  }
  // A line: a chunk size, the CRLF after a chunk's data, or a trailer.
  const size_t eol = data.find('\n');
  const size_t take = eol == std::string_view::npos ? data.size() : eol + 1;
  line_.append(data.substr(0, take));
  if (body_ == Body::trailers) trailer_bytes_ += take;
  const size_t limit = body_ == Body::trailers ? limits_.max_header_bytes : kMaxChunkLine;
  if ((body_ == Body::trailers ? trailer_bytes_ : line_.size()) > limit) {
    fail(body_ == Body::trailers ? 431 : 400,
         "a chunked body's line over " + std::to_string(limit) + " bytes");
    return take;
  }
  if (eol == std::string_view::npos) return take;
  const std::string line(strip_eol(line_));
  line_.clear();
  if (line.find('\r') != std::string::npos) {
    fail(400, "a bare CR in a chunked body");
    return take;
  }
  switch (body_) {
    case Body::chunk_size: parse_chunk_size(line); break;
    case Body::chunk_end:
      if (!line.empty()) fail(400, "a chunk's data is longer than its size");
      body_ = Body::chunk_size;
      break;
    case Body::trailers:
      if (line.empty()) {
        state_ = State::complete;
        body_ = Body::none;
      } else if (line.find(':') == std::string::npos || line.front() == ' ' ||
                 line.front() == '\t' || !is_token(line.substr(0, line.find(':')))) {
        fail(400, "a malformed trailer line");
      }
      break;
    default: break;
  }
  return take;
}

}  // namespace ic::http
