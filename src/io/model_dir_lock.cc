#include "io/model_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ic {
namespace {

// The holder's "pid <n> on <host>" line, or what is known when it cannot be read.
std::string read_holder(int fd) {
  char text[256] = {};
  const ssize_t got = pread(fd, text, sizeof(text) - 1, 0);
  if (got <= 0) return "a process that has not written its name yet";
  std::string holder(text, static_cast<size_t>(got));
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder;
}

}  // namespace

Result<ModelDirLock> ModelDirLock::acquire(const std::string& model_dir) {
  std::string path = model_dir + "/.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return error(path, ": cannot open the model_dir lock: ", std::strerror(errno));
  ModelDirLock lock(fd, std::move(path));  // closes fd on every return below
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return error(model_dir, " is in use by another trainer (", read_holder(fd), ", holding ",
                   lock.path_,
                   "); two trainers writing one model_dir would mix their checkpoints. Stop it, "
                   "or use another --model_dir");
    }
    return error(lock.path_, ": cannot lock: ", std::strerror(errno));
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "unknown host");
  const std::string holder = "pid " + std::to_string(getpid()) + " on " + std::string(host) + "\n";
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    return error(lock.path_, ": cannot write the lock holder: ", std::strerror(errno));
  }
  return lock;
}

ModelDirLock::ModelDirLock(ModelDirLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

ModelDirLock& ModelDirLock::operator=(ModelDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

ModelDirLock::~ModelDirLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace ic
