// An HTTP/1.1 request as the parser hands it on, and the answer a handler gives back.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ic::http {

struct Request {
  std::string method;     // "GET", "POST", ... (case-sensitive, as RFC 9110 says)
  std::string target;     // the request-target as sent: "/v1/models/m:predict?x=1"
  int minor_version = 1;  // HTTP/1.0 or HTTP/1.1
  // In the order received; names as sent (compare them with header()).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // de-chunked
  bool keep_alive = true;
  std::string peer;  // the client's address ("127.0.0.1")
  // When the request's first byte was read: the time to its handler is reading and waiting
  // for a worker.
  std::chrono::steady_clock::time_point first_byte;

  // The path without its query ("/v1/models/m:predict").
  std::string_view path() const;
  // The first value of a header, matched without regard to case; empty when absent.
  std::string_view header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra headers; Content-Length, Connection and Date are the server's.
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // ask the server to close the connection after this answer
};

// "OK", "Bad Request", ... for the codes this server sends ("" for others).
std::string_view reason_phrase(int status);

// Whether two header names are equal without regard to ASCII case.
bool same_name(std::string_view a, std::string_view b);

}  // namespace ic::http
