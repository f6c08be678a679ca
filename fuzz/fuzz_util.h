// What the harnesses share: a private scratch directory per process (the only place a harness
// writes; removed at exit) and helpers to hand the fuzzer's bytes to parsers that read files.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace ic::fuzz {

class ScratchDir {
 public:
  // $TMPDIR/ic_fuzz_XXXXXX, made on first use.
  static const std::string& path() {
    static ScratchDir dir;
    return dir.path_;
  }

 private:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ic_fuzz_XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("ic_fuzz: mkdtemp");
      std::abort();  // no scratch directory: nothing can be tested
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string path_;
};

// Writes `bytes` to ScratchDir/`relative` (replacing it) and returns the full path.
inline std::string write_scratch_file(const std::string& relative, std::string_view bytes) {
  const std::string path = ScratchDir::path() + "/" + relative;
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> f(std::fopen(path.c_str(), "wb"));
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size()) {
    std::perror(("ic_fuzz: cannot write " + path).c_str());
    std::abort();
  }
  return path;
}

// A harness's own check failed: says which before the abort, since libFuzzer's report shows
// only the line of the abort.
[[noreturn]] inline void check_failed(const char* what) {
  std::fprintf(stderr, "ic_fuzz: check failed: %s\n", what);
  std::abort();
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace ic::fuzz
