#include "serve/server.h"

#include <condition_variable>
#include <mutex>

#include "serve/grpc_frontend.h"
#include "serve/rest_frontend.h"
#include "serve/serving_core.h"

namespace ic {

struct Server::State {
  std::unique_ptr<ServingCore> core;
  std::unique_ptr<RestFrontend> rest;  // null: REST is off
  std::unique_ptr<GrpcFrontend> grpc;  // null: gRPC is off
  std::once_flag grpc_stopped;
  // run() without REST waits here for shutdown().
  std::mutex run_mutex;
  std::condition_variable run_wake;
  bool running = false, stop_asked = false;  // guarded by run_mutex

  void stop_grpc() {
    if (grpc) std::call_once(grpc_stopped, [&] { grpc->shutdown(); });
  }
};

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& options) {
  if (options.port < 0 && options.grpc_port < 0) {
    return invalid_argument("both front ends are off: give a gRPC port or a REST port");
  }
  IC_ASSIGN_OR_RETURN(std::unique_ptr<ServingCore> core, ServingCore::create(options));
  auto state = std::make_unique<State>();
  state->core = std::move(core);
  if (options.port >= 0) {
    Result<std::unique_ptr<RestFrontend>> rest = RestFrontend::create(*state->core, options);
    if (!rest.ok()) return rest.status().with_context("REST");
    state->rest = std::move(*rest);
  }
  if (options.grpc_port >= 0) {
    IC_ASSIGN_OR_RETURN(state->grpc,
                        GrpcFrontend::start(*state->core, options.host, options.grpc_port,
                                            options.grpc_max_message_bytes));
  }
  return std::make_unique<Server>(std::move(state));
}

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  shutdown();
  // The front ends have drained; the core then stops its watcher and its batcher.
  state_->grpc.reset();
  state_->rest.reset();
  state_->core.reset();
}

int Server::port() const { return state_->rest ? state_->rest->port() : -1; }

int Server::grpc_port() const { return state_->grpc ? state_->grpc->port() : -1; }

void Server::run() {
  State& s = *state_;
  {
    std::lock_guard lock(s.run_mutex);
    s.running = !s.stop_asked;
  }
  if (s.rest) {
    s.rest->run();
  } else {
    std::unique_lock lock(s.run_mutex);
    s.run_wake.wait(lock, [&] { return s.stop_asked; });
  }
  // Every REST request received has been answered; gRPC calls in flight are answered too.
  s.stop_grpc();
  std::lock_guard lock(s.run_mutex);
  s.running = false;
}

void Server::shutdown() {
  State& s = *state_;
  // REST first: every answer written from here on closes its connection, including those of
  // the batch stop_waiting() then runs at once.
  if (s.rest) s.rest->shutdown();
  s.core->stop_waiting();
  {
    std::lock_guard lock(s.run_mutex);
    s.stop_asked = true;
  }
  s.run_wake.notify_all();
  s.stop_grpc();
}

bool Server::is_running() const {
  State& s = *state_;
  if (s.rest) return s.rest->is_running();
  std::lock_guard lock(s.run_mutex);
  return s.running;
}

std::shared_ptr<ServedModel> Server::current_model() const { return state_->core->current(); }

}  // namespace ic
