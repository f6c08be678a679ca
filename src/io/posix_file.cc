#include "io/posix_file.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ic {
namespace {

std::string directory_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// Unique within this process and across processes (pid): concurrent writers never share one.
std::string temp_path_for(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

StatusCode status_code_for_errno(int errno_value) {
  struct Row {
    int errno_value;
    StatusCode code;
  };
  static constexpr Row kTable[] = {
      {ENOENT, StatusCode::not_found},          {EEXIST, StatusCode::already_exists},
      {ENOSPC, StatusCode::resource_exhausted}, {EDQUOT, StatusCode::resource_exhausted},
      {ENOMEM, StatusCode::resource_exhausted},
  };
  for (const Row& row : kTable) {
    if (row.errno_value == errno_value) return row.code;
  }
  return StatusCode::internal;
}

Status write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(size, size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      return error(status_code_for_errno(errno), path, ": write failed: ", std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status();
}

// Errors say where in the file; the caller adds which file.
Status read_all(int fd, void* data, size_t size, uint64_t offset) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n =
        ::pread(fd, p, std::min<size_t>(size, size_t{1} << 30), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return error(status_code_for_errno(errno), "read failed at byte ", offset, ": ",
                   std::strerror(errno));
    }
    if (n == 0) return data_loss("unexpected end of file at byte ", offset);
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status();
}

Status write_posix_file_atomically(const std::string& path,
                                   const std::vector<std::string_view>& pieces) {
  const std::string temp = temp_path_for(path);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    return error(status_code_for_errno(errno), temp, ": cannot create: ", std::strerror(errno));
  }
  auto fail = [&](Status status) {
    fd.reset();
    ::unlink(temp.c_str());
    return status;
  };
  for (const std::string_view piece : pieces) {
    Status st = write_all(fd.get(), piece.data(), piece.size(), temp);
    if (!st.ok()) return fail(st);
  }
  auto failed = [&](const char* what) {
    return fail(error(status_code_for_errno(errno), temp, what, std::strerror(errno)));
  };
  if (::fsync(fd.get()) != 0) return failed(": fsync failed: ");
  if (fd.close_checked() != 0) return failed(": close failed: ");
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return fail(error("renaming ", temp, " to ", path, " failed: ", std::strerror(errno)));
  }
  // The rename is durable only once the directory entry is.
  const std::string dir = directory_of(path);
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0)
    return error(dir, ": cannot open directory to fsync: ", std::strerror(errno));
  if (::fsync(dir_fd.get()) != 0) {
    return error(dir, ": directory fsync failed: ", std::strerror(errno));
  }
  return Status();
}

}  // namespace ic
