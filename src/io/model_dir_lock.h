// One trainer per model_dir: two processes writing checkpoints and the `checkpoint` index of
// the same directory at once would interleave their steps. A trainer takes an exclusive
// flock() on model_dir/.lock for as long as it runs and writes its pid and host into the file,
// so a second one fails with a message naming the holder. flock() belongs to the open file:
// the kernel releases it when the holder exits in any way (even SIGKILL), so a stale .lock
// of a dead process is simply taken over. Readers (--mode=eval, classify) never lock.
#pragma once

#include <string>

#include "core/status.h"

namespace ic {

class ModelDirLock {
 public:
  // Creates model_dir/.lock if needed and locks it without waiting. Error (naming the holder
  // as written in the file) when another process holds it.
  static Result<ModelDirLock> acquire(const std::string& model_dir);

  ModelDirLock(ModelDirLock&& other) noexcept;
  ModelDirLock& operator=(ModelDirLock&& other) noexcept;
  ModelDirLock(const ModelDirLock&) = delete;
  ModelDirLock& operator=(const ModelDirLock&) = delete;
  ~ModelDirLock();  // closes the file, which releases the lock (the file stays)

  const std::string& path() const { return path_; }

 private:
  ModelDirLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace ic
