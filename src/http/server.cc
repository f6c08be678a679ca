#include "http/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/unique_fd.h"
#include "http/worker_pool.h"

namespace ic::http {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kListenerId = 0, kWakeId = 1;
constexpr auto kLinger = std::chrono::seconds(2);  // reading what a refused client still sends
constexpr std::string_view kBusy =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 39\r\n"
    "Connection: close\r\n\r\n{\"error\": \"too many open connections\"}\n";

enum class Phase { reading, handling, writing, lingering };

struct Connection {
  uint64_t id = 0;
  UniqueFd fd;
  std::string peer;
  RequestParser parser;
  std::string pending;  // read, not yet parsed: the start of the next pipelined request
  std::string out;      // the answer being written
  size_t out_offset = 0;
  Phase phase = Phase::reading;
  Clock::time_point deadline;
  bool head_seen = false;
  bool peer_closed = false;  // the client half-closed (or closed)
  bool close_after_write = false;
  bool refused = false;  // answered an error before reading the whole request
  bool closed = false;   // closed in this loop turn; erased at its end, so references stay valid
  size_t reserved = 0;   // body bytes counted against max_inflight_body_bytes
  Clock::time_point first_byte;  // of the request being read

  explicit Connection(ParserLimits limits) : parser(limits) {}
};

std::string json_escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string http_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return text;
}

std::string serialize(const Response& r, bool close, bool head_only, int minor_version) {
  std::string reason(reason_phrase(r.status));
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason + "\r\n";
  out += "Date: " + http_date() + "\r\n";
  if (!r.content_type.empty()) out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (close) {
    out += "Connection: close\r\n";
  } else if (minor_version == 0) {
    out += "Connection: keep-alive\r\n";
  }
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  if (!head_only) out += r.body;
  return out;
}

std::string address_of(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof text);
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text, sizeof text);
  }
  return text;
}

// A thousand slow clients need a thousand descriptors: take what the hard limit allows.
void raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

struct Server::Loop {
  ServerOptions options;
  Handler handler;
  UniqueFd listener, epoll, wake;
  int port = 0;
  std::atomic<bool> running{false}, stop_requested{false};
  std::atomic<size_t> open{0};
  bool draining = false;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections;
  std::vector<uint64_t> closed_ids;
  std::map<std::string, size_t> per_address;
  std::shared_ptr<ByteBudget> budget;  // request bytes held: bodies received or handled
  size_t handling = 0;                 // requests at the workers
  uint64_t next_id = 2;
  Clock::time_point last_expiry_scan;
  std::mutex done_mutex;
  struct Answer {
    uint64_t id;
    Response response;
    bool keep_alive;
    int minor_version;
    bool head_only;
  };
  std::vector<Answer> done;  // from the workers
  std::unique_ptr<WorkerPool> workers;

  void watch(Connection& c, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.id;
    epoll_ctl(epoll.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
  }

  void close_connection(Connection& c) {
    if (c.closed) return;
    c.closed = true;
    budget->release(c.reserved);
    c.reserved = 0;
    if (--per_address[c.peer] == 0) per_address.erase(c.peer);
    c.fd.reset();  // closing the descriptor also takes it out of the epoll set
    --open;
    closed_ids.push_back(c.id);
  }

  void erase_closed() {
    for (const uint64_t id : closed_ids) connections.erase(id);
    closed_ids.clear();
  }

  void accept_all() {
    while (listener.get() >= 0) {
      sockaddr_storage addr{};
      socklen_t length = sizeof addr;
      const int fd = accept4(listener.get(), reinterpret_cast<sockaddr*>(&addr), &length,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        return;  // EAGAIN, or out of descriptors: the backlog keeps the rest for later
      }
      UniqueFd socket(fd);
      const std::string peer = address_of(addr);
      if (connections.size() >= options.max_connections ||
          per_address[peer] >= options.max_connections_per_address) {
        if (per_address[peer] == 0) per_address.erase(peer);
        send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        continue;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Connection>(options.parser);
      c->id = next_id++;
      c->fd = std::move(socket);
      c->peer = peer;
      c->deadline = Clock::now() + options.header_timeout;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = c->id;
      if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev) != 0) continue;
      ++per_address[peer];
      ++open;
      connections.emplace(c->id, std::move(c));
    }
  }

  // Reads what the socket has while the connection is reading; parses as it goes.
  void read_some(Connection& c) {
    char buffer[64 << 10];
    while (!c.closed && (c.phase == Phase::reading || c.phase == Phase::lingering)) {
      const ssize_t n = recv(c.fd.get(), buffer, sizeof buffer, 0);
      if (n > 0) {
        if (c.phase == Phase::lingering) continue;  // a refused request's rest: dropped
        c.pending.append(buffer, static_cast<size_t>(n));
        process(c);
        continue;
      }
      if (n == 0) {
        c.peer_closed = true;
      } else if (errno == EINTR) {
        continue;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        close_connection(c);
        return;
      }
      break;
    }
    if (c.peer_closed && (c.phase == Phase::lingering || c.phase == Phase::reading)) {
      // A reading connection whose client has gone: nothing whole is left to answer (a
      // complete request would have moved it on to handling).
      close_connection(c);
    }
  }

  // Feeds the pending bytes to the parser while the connection is reading.
  void process(Connection& c) {
    while (!c.closed && c.phase == Phase::reading && !c.pending.empty()) {
      const bool was_started = c.parser.started();
      const size_t used = c.parser.feed(c.pending);
      if (!was_started && c.parser.started()) c.first_byte = Clock::now();
      c.pending.erase(0, used);
      if (!after_feed(c)) return;
    }
  }

  // Acts on the parser's state; false when the connection stopped reading.
  bool after_feed(Connection& c) {
    RequestParser& p = c.parser;
    if (p.state() == RequestParser::State::failed) {
      respond_error(c, p.error_status(), p.error_message());
      return false;
    }
    if (p.head_complete() && !c.head_seen) {
      c.head_seen = true;
      c.deadline = Clock::now() + options.body_timeout;
      if (p.state() == RequestParser::State::reading_body && p.expects_continue()) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        send(c.fd.get(), kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    }
    if (p.head_complete()) {
      // Count the body against the server's budget before it arrives (declared) or as it
      // arrives (chunked).
      const size_t want = p.declared_length() > 0 ? static_cast<size_t>(p.declared_length())
                                                  : p.request().body.size();
      if (want > c.reserved) {
        if (!budget->try_reserve(want - c.reserved)) {
          respond_error(c, 503, "the server is receiving too many request bytes at once");
          return false;
        }
        c.reserved = want;
      }
    }
    if (p.state() != RequestParser::State::complete) return true;
    dispatch(c);
    return false;
  }

  void dispatch(Connection& c) {
    c.phase = Phase::handling;
    watch(c, 0);  // read nothing more until this request is answered
    auto request = std::make_shared<Request>(std::move(c.parser.request()));
    request->peer = c.peer;
    request->first_byte = c.first_byte;
    ++handling;
    workers->submit([this, id = c.id, request] {
      Response response;
      try {
        response = handler(*request);
      } catch (const std::exception& e) {
        response = Response{
            500, "application/json", "{\"error\": \"" + json_escaped(e.what()) + "\"}", {}, true};
      }
      {
        std::lock_guard lock(done_mutex);
        done.push_back(Answer{id, std::move(response), request->keep_alive, request->minor_version,
                              request->method == "HEAD"});
      }
      const uint64_t one = 1;
      (void)!write(wake.get(), &one, sizeof one);
    });
  }

  void collect_done() {
    std::vector<Answer> answers;
    {
      std::lock_guard lock(done_mutex);
      answers.swap(done);
    }
    for (const Answer& a : answers) {
      --handling;
      auto it = connections.find(a.id);
      if (it == connections.end() || it->second->closed) continue;
      start_write(*it->second, a.response, a.keep_alive, a.minor_version, a.head_only);
    }
  }

  void respond_error(Connection& c, int status, const std::string& message) {
    c.refused = true;
    Response r{
        status, "application/json", "{\"error\": \"" + json_escaped(message) + "\"}", {}, true};
    start_write(c, r, false, c.parser.request().minor_version, false);
  }

  void start_write(Connection& c, const Response& r, bool keep_alive, int minor_version,
                   bool head_only) {
    budget->release(c.reserved);
    c.reserved = 0;
    // stop_requested too: an answer finished between shutdown() and the loop's next turn (the
    // batch a drain runs at once) still tells its client the connection ends.
    c.close_after_write = r.close || !keep_alive || draining || stop_requested;
    c.out = serialize(r, c.close_after_write, head_only, minor_version);
    c.out_offset = 0;
    c.phase = Phase::writing;
    c.deadline = Clock::now() + options.write_timeout;
    write_some(c);
  }

  void write_some(Connection& c) {
    while (c.out_offset < c.out.size()) {
      const ssize_t n =
          send(c.fd.get(), c.out.data() + c.out_offset, c.out.size() - c.out_offset, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_offset += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        watch(c, EPOLLOUT);
        return;
      } else {
        close_connection(c);
        return;
      }
    }
    c.out.clear();
    c.out.shrink_to_fit();
    if (c.close_after_write) {
      begin_linger(c);
      return;
    }
    c.parser.reset();
    c.head_seen = false;
    c.phase = Phase::reading;
    c.deadline = Clock::now() + (c.pending.empty() ? options.idle_timeout : options.header_timeout);
    watch(c, EPOLLIN | EPOLLRDHUP);
    process(c);  // a pipelined request already read
    if (c.phase == Phase::reading && c.peer_closed) {
      close_connection(c);  // half-closed, and nothing whole is left
    }
  }

  // After an answer that closes: when the client may still be sending (a refused request, or
  // pipelined bytes), stop sending and drop what it sends for a moment, so that closing with
  // unread bytes does not reset the connection before the client has read the answer.
  void begin_linger(Connection& c) {
    if (c.peer_closed || (!c.refused && c.pending.empty())) {
      close_connection(c);
      return;
    }
    ::shutdown(c.fd.get(), SHUT_WR);
    c.phase = Phase::lingering;
    c.deadline = Clock::now() + kLinger;
    c.pending.clear();
    watch(c, EPOLLIN | EPOLLRDHUP);
  }

  void on_event(uint64_t id, uint32_t events) {
    auto it = connections.find(id);
    if (it == connections.end() || it->second->closed) return;
    Connection& c = *it->second;
    if (events & EPOLLERR) {
      close_connection(c);
      return;
    }
    if (c.phase == Phase::writing) {
      if (events & EPOLLOUT) write_some(c);
      return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) read_some(c);
  }

  void expire() {
    const auto now = Clock::now();
    if (now - last_expiry_scan < std::chrono::milliseconds(50)) return;
    last_expiry_scan = now;
    for (const auto& [id, connection] : connections) {
      Connection& c = *connection;
      if (c.closed || c.phase == Phase::handling || c.deadline > now) continue;
      if (c.phase != Phase::reading || (!c.parser.started() && c.pending.empty())) {
        close_connection(c);  // idle, a slow reader of its answer, or done lingering
      } else {
        const auto limit = c.head_seen ? options.body_timeout : options.header_timeout;
        respond_error(c, 408,
                      std::string(c.head_seen ? "the request's body" : "the request's head") +
                          " did not arrive within " + std::to_string(limit.count()) + " ms");
      }
    }
  }

  void begin_drain() {
    draining = true;
    if (listener.get() >= 0) {
      epoll_ctl(epoll.get(), EPOLL_CTL_DEL, listener.get(), nullptr);
      listener.reset();
    }
    for (const auto& [id, connection] : connections) {
      Connection& c = *connection;
      if (c.closed || c.phase != Phase::reading) continue;
      read_some(c);  // a request already in the socket's buffer is one received
      if (!c.closed && c.phase == Phase::reading && !c.parser.started() && c.pending.empty()) {
        close_connection(c);
      }
    }
  }

  void run() {
    running = true;
    epoll_event events[256];
    while (true) {
      if (stop_requested && !draining) {
        begin_drain();
        erase_closed();
      }
      if (draining && connections.empty() && handling == 0) break;
      const int n = epoll_wait(epoll.get(), events, 256, 50);
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kListenerId) {
          accept_all();
        } else if (id == kWakeId) {
          uint64_t count = 0;
          (void)!read(wake.get(), &count, sizeof count);
        } else {
          on_event(id, events[i].events);
        }
      }
      collect_done();
      expire();
      erase_closed();
    }
    running = false;
  }
};

Server::Server(std::unique_ptr<Loop> loop) : loop_(std::move(loop)) {}
Server::~Server() { loop_->workers.reset(); }

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& options, Handler handler) {
  const std::string where = options.host + ":" + std::to_string(options.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc =
      getaddrinfo(options.host.c_str(), std::to_string(options.port).c_str(), &hints, &found);
  if (rc != 0) {
    return Status(StatusCode::invalid_argument, "listening on " + where + ": " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, freeaddrinfo);
  auto loop = std::make_unique<Loop>();
  loop->options = options;
  loop->budget = options.inflight_budget
                     ? options.inflight_budget
                     : std::make_shared<ByteBudget>(options.max_inflight_body_bytes);
  loop->handler = std::move(handler);
  loop->listener =
      UniqueFd(socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int one = 1;
  setsockopt(loop->listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // The kernel caps the backlog at net.core.somaxconn; a burst of new connections waits there.
  if (loop->listener.get() < 0 ||
      bind(loop->listener.get(), found->ai_addr, found->ai_addrlen) != 0 ||
      listen(loop->listener.get(), 4096) != 0) {
    const int err = errno;
    return Status(err == EADDRINUSE ? StatusCode::unavailable : StatusCode::internal,
                  "listening on " + where + ": " + std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(loop->listener.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  loop->port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                                 : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  loop->epoll = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
  loop->wake = UniqueFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (loop->epoll.get() < 0 || loop->wake.get() < 0) {
    return Status::error("listening on " + where + ": " + std::strerror(errno));
  }
  for (const auto& [fd, id] :
       {std::pair{loop->listener.get(), kListenerId}, std::pair{loop->wake.get(), kWakeId}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    epoll_ctl(loop->epoll.get(), EPOLL_CTL_ADD, fd, &ev);
  }
  raise_descriptor_limit();
  loop->workers = std::make_unique<WorkerPool>(options.worker_threads);
  return std::make_unique<Server>(std::move(loop));
}

int Server::port() const { return loop_->port; }
void Server::run() { loop_->run(); }
bool Server::is_running() const { return loop_->running; }
size_t Server::open_connections() const { return loop_->open; }

void Server::shutdown() {
  loop_->stop_requested = true;
  const uint64_t one = 1;
  (void)!write(loop_->wake.get(), &one, sizeof one);
}

}  // namespace ic::http
