// A small tmpfs mounted for one test: a disk that really fills up (ENOSPC). Mounting one
// needs root, as the CI machine runs; elsewhere mounted() is false and the test says it is
// skipped.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tools/tool_runner.h"

namespace ic::testing {

// A tmpfs of `megabytes` at `path`, unmounted at the end of the scope.
class SmallDisk {
 public:
  SmallDisk(const std::string& path, int megabytes) : path_(path) {
    std::filesystem::create_directories(path);
    mounted_ =
        ::geteuid() == 0 &&
        run_command("mount -t tmpfs -o size=" + std::to_string(megabytes) + "m tmpfs " + path)
                .exit_code == 0;
  }
  ~SmallDisk() {
    if (mounted_) run_command("umount " + path_);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;
  bool mounted() const { return mounted_; }

 private:
  std::string path_;
  bool mounted_ = false;
};

}  // namespace ic::testing
