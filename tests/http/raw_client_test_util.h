// A raw TCP client for the HTTP tests: sends exactly the bytes a test gives (slow, malformed,
// pipelined, half-closed) and reads answers with a deadline, so no test can hang.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/unique_fd.h"

namespace ic::http::testing {

struct RawAnswer {
  int status = 0;  // 0: none (closed or timed out)
  std::string head, body;
  bool closes() const { return head.find("Connection: close") != std::string::npos; }
};

class RawClient {
 public:
  // Connects to 127.0.0.1:port (from `source`, another loopback address, when given).
  explicit RawClient(int port, const std::string& source = "");
  bool connected() const { return fd_.get() >= 0; }
  bool send(const std::string& bytes);
  void half_close();
  // The next answer (head and Content-Length body), or status 0 after `timeout`.
  RawAnswer read_answer(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Whether the server closed the connection within `timeout` (answers before it are dropped).
  bool closed_within(std::chrono::milliseconds timeout);

 private:
  // Reads more into buffer_; false on close, error or deadline.
  bool fill(std::chrono::steady_clock::time_point deadline);
  UniqueFd fd_;
  std::string buffer_;
};

}  // namespace ic::http::testing
