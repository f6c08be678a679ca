// Small POSIX file helpers shared by the checkpoint writers and readers: complete reads and
// writes, and the atomic-replace write every checkpoint file uses (UniqueFd is core/unique_fd.h).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/unique_fd.h"

namespace ic {

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
