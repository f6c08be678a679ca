// TensorFlow Serving's REST API on serve's own HTTP server (http/server.h): routes a complete
// request to the ServingCore and turns the core's Statuses into HTTP statuses
// (serve/http_status.h). The routes are listed in serve/server.h.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "http/server.h"

namespace ic {

class ServingCore;
struct ServerOptions;

class RestFrontend {
 public:
  // Binds options.host:options.port (0: any free port).
  static Result<std::unique_ptr<RestFrontend>> create(ServingCore& core,
                                                      const ServerOptions& options);
  int port() const { return http_->port(); }
  void run() { http_->run(); }  // until shutdown() and every received request is answered
  void shutdown() { http_->shutdown(); }
  bool is_running() const { return http_->is_running(); }

  explicit RestFrontend(std::unique_ptr<http::Server> http) : http_(std::move(http)) {}

 private:
  std::unique_ptr<http::Server> http_;
};

// The HTTP server's limits for `options` (tests read them too).
http::ServerOptions http_options_for(const ServerOptions& options);

}  // namespace ic
