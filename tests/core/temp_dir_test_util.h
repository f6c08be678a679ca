// A fresh directory for one test, removed with everything in it when the test is done.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ic::testing {

class TempDir {
 public:
  // Under the system temp dir, `ic_<prefix>` plus six random characters (mkdtemp).
  explicit TempDir(const std::string& prefix = "test_") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("ic_" + prefix)).string() + "XXXXXX";
    path_ = mkdtemp(pattern.data()) ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }  // empty when it could not be made
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace ic::testing
