// A strict, incremental HTTP/1.1 request parser (RFC 9112), fed bytes as they arrive.
//
// Strict where leniency lets one request be read two ways (request smuggling behind a proxy) or
// lets a client make the server hold unbounded memory:
//   - a header line without a colon, with whitespace before the colon, with a name that is not
//     a token, or an obs-fold continuation line: 400;
//   - Content-Length that is not all digits ("+5", "1,2", "", "-1"), out of range, or given
//     twice with different values; Content-Length together with Transfer-Encoding: 400;
//   - a transfer coding other than chunked: 501; a bad chunk size: 400;
//   - a POST, PUT or PATCH with neither Content-Length nor chunked: 411;
//   - more than max_header_bytes before the blank line (request line, headers, and a chunked
//     body's trailers each count): 431, after holding at most that many bytes;
//   - a declared or de-chunked body over max_body_bytes: 413, known before any body byte when
//     the length is declared.
// One parser reads one request at a time; reset() makes it ready for the next one on the
// same connection. feed() stops at the end of a request, so pipelined bytes stay with the
// caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/message.h"

namespace ic::http {

struct ParserLimits {
  size_t max_header_bytes = 8 << 10;
  size_t max_headers = 100;
  size_t max_body_bytes = 64 << 20;
};

class RequestParser {
 public:
  enum class State { reading_head, reading_body, complete, failed };

  explicit RequestParser(ParserLimits limits) : limits_(limits) {}

  // Reads what it can of `data`; returns how many bytes it used (fewer than given once the
  // request is complete or the parser has failed).
  size_t feed(std::string_view data);
  // Gets ready for the next request on the connection.
  void reset();

  State state() const { return state_; }
  bool head_complete() const { return state_ == State::reading_body || state_ == State::complete; }
  // Whether any byte of a request has arrived (blank lines before a request do not count).
  bool started() const { return started_; }
  // The request's head asked for "100 Continue" before it sends its body.
  bool expects_continue() const { return expects_continue_; }
  // The declared body length, -1 for chunked; valid once the head is complete.
  int64_t declared_length() const { return declared_length_; }

  // The request; whole once state() is complete, its head once head_complete().
  const Request& request() const { return request_; }
  Request& request() { return request_; }

  // On failure: the HTTP status to answer (400, 411, 413, 431, 501, 505) and why.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

 private:
  enum class Body { none, length, chunk_size, chunk_data, chunk_end, trailers };

  size_t feed_head(std::string_view data);
  size_t feed_body(std::string_view data);
  bool parse_head();
  bool parse_request_line(std::string_view line);
  bool parse_header_line(std::string_view line);
  bool apply_framing();
  bool parse_chunk_size(std::string_view line);
  bool fail(int status, std::string message);

  ParserLimits limits_;
  State state_ = State::reading_head;
  Body body_ = Body::none;
  bool started_ = false;
  bool expects_continue_ = false;
  int64_t declared_length_ = 0;
  uint64_t remaining_ = 0;  // body bytes still due (length or current chunk)
  std::string head_;        // the head so far (at most max_header_bytes)
  std::string line_;        // a chunk-size or trailer line so far
  size_t trailer_bytes_ = 0;
  Request request_;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace ic::http
