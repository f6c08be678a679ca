// An HTTP/1.1 server on one epoll loop: the loop thread owns every socket and does all the
// reading, parsing (http/request_parser.h) and writing; a complete request, and only a
// complete one, goes to a pool of worker threads that run the handler. So a connection that is
// still sending its head or body, or not reading its answer, holds a few kilobytes and a file
// descriptor, never a thread, and every phase has its own deadline:
//   - header_timeout: a request's head must arrive whole within it (also the first request on
//     a new connection); idle_timeout: a kept-alive connection with no new request;
//   - body_timeout: the body, from the end of the head; write_timeout: one whole answer.
// Limits: connections in total and per client address (beyond them a connection gets 503 and
// is closed), and max_inflight_body_bytes for the bodies being received or handled at once,
// server-wide (a request beyond it gets 503 before its body is read).
// Pipelined requests are answered in order, one at a time per connection; a client that
// half-closes after its request still gets its answer. shutdown() closes the listener, answers
// every request already received (with Connection: close) and closes idle connections.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/byte_budget.h"
#include "core/status.h"
#include "http/message.h"
#include "http/request_parser.h"

namespace ic::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (see Server::port())
  ParserLimits parser;
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{30000};
  std::chrono::milliseconds idle_timeout{5000};
  std::chrono::milliseconds write_timeout{30000};
  size_t max_connections = 8192;
  size_t max_connections_per_address = 2048;
  size_t max_inflight_body_bytes = size_t{1} << 30;
  // The budget those bytes are counted in, when other request paths share it (serve's gRPC
  // front end); unset: the server's own, of max_inflight_body_bytes.
  std::shared_ptr<ByteBudget> inflight_budget;
  int worker_threads = 32;
};

// Runs on a worker thread; may block (it waits for the model). An exception becomes a 500.
using Handler = std::function<Response(Request&)>;

class Server {
 public:
  // Binds and listens (errors name host:port); the loop starts with run().
  static Result<std::unique_ptr<Server>> create(const ServerOptions& options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  // The loop, on the calling thread, until shutdown() and every received request is answered.
  void run();
  // Thread-safe (also from a signal-watching thread): starts the drain described above.
  void shutdown();
  bool is_running() const;
  // Connections open now (tests and /metrics).
  size_t open_connections() const;

  struct Loop;  // server.cc
  explicit Server(std::unique_ptr<Loop> loop);

 private:
  std::unique_ptr<Loop> loop_;
};

}  // namespace ic::http
