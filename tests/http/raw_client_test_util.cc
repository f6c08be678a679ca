#include "raw_client_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

namespace ic::http::testing {

RawClient::RawClient(int port, const std::string& source) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!source.empty()) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, source.c_str(), &local.sin_addr);
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) return;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) fd_ = std::move(fd);
}

bool RawClient::send(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

void RawClient::half_close() { shutdown(fd_.get(), SHUT_WR); }

bool RawClient::fill(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd_.get(), POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char chunk[65536];
  const ssize_t n = recv(fd_.get(), chunk, sizeof chunk, 0);
  if (n <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

RawAnswer RawClient::read_answer(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) return {};
  }
  RawAnswer answer;
  answer.head = buffer_.substr(0, end + 4);
  answer.status = std::atoi(answer.head.c_str() + 9);
  size_t length = 0;
  const size_t at = answer.head.find("Content-Length: ");
  if (at != std::string::npos) length = std::strtoull(answer.head.c_str() + at + 16, nullptr, 10);
  while (buffer_.size() < end + 4 + length) {
    if (!fill(deadline)) return {};
  }
  answer.body = buffer_.substr(end + 4, length);
  buffer_.erase(0, end + 4 + length);
  return answer;
}

bool RawClient::closed_within(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (poll(&p, 1, 20) > 0) {
      char chunk[65536];
      const ssize_t n = recv(fd_.get(), chunk, sizeof chunk, 0);
      if (n <= 0) return true;
    }
  }
  return false;
}

}  // namespace ic::http::testing
