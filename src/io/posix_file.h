// Small POSIX file helpers shared by the checkpoint writers and readers: an owning file
// descriptor, complete reads/writes, and the atomic-replace write every checkpoint file uses.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ic {

// A POSIX file descriptor closed on scope exit.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }
  // Closes now and reports the error close() may carry (deferred write errors on NFS).
  int close_checked() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// The code for a failed system call's errno: ENOENT not_found, EEXIST already_exists, ENOSPC
// / EDQUOT / ENOMEM resource_exhausted, anything else internal.
StatusCode status_code_for_errno(int errno_value);

// Writes all `size` bytes; errors name `path`.
Status write_all(int fd, const void* data, size_t size, const std::string& path);
// Reads exactly `size` bytes at `offset` (pread); errors say where, the caller adds which file.
// A file that ends before is data_loss (it was truncated after it was opened).
Status read_all(int fd, void* data, size_t size, uint64_t offset);

// Temp file (<path>.tmp-<pid>-<n>) + fsync + rename + directory fsync, for any file that must
// never be seen half-written: a crash leaves the old file or the new one, never a mix. The
// pieces are written one after another.
Status write_posix_file_atomically(const std::string& path,
                                   const std::vector<std::string_view>& pieces);

}  // namespace ic
