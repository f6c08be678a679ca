// The local FileSystem: POSIX files, with the guarantees the checkpoint writers always had
// (io/posix_file.h). "file://" is stripped; every error names the path.
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "io/file_system.h"
#include "io/posix_file.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

constexpr size_t kLocalReadBuffer = size_t{1} << 20;

std::string local(const std::string& path) { return local_path(path).value_or(path); }

// The code for a std::filesystem error: its value is an errno.
StatusCode code_of(const std::error_code& ec) { return status_code_for_errno(ec.value()); }

// An error for a failed system call, coded by errno (io/posix_file.h), with its text last.
template <typename... Parts>
Status errno_error(const Parts&... parts) {
  const int saved = errno;
  return error(status_code_for_errno(saved), parts..., std::strerror(saved));
}

class LocalRandomAccessFile final : public RandomAccessFile {
 public:
  LocalRandomAccessFile(std::string path, UniqueFd fd, uint64_t size)
      : path_(std::move(path)), fd_(std::move(fd)), size_(size) {}
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, size_t n, char* out) override {
    Status st = read_all(fd_.get(), out, n, offset);
    return st.ok() ? st : st.with_context(path_);
  }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  UniqueFd fd_;
  uint64_t size_;
};

class LocalWritableFile final : public WritableFile {
 public:
  LocalWritableFile(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {
    buffer_ = std::make_unique<char[]>(kLocalReadBuffer);
    std::setvbuf(file_.get(), buffer_.get(), _IOFBF, kLocalReadBuffer);
  }
  Status append(std::string_view bytes) override {
    if (!file_) return error(path_, ": write after close");
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_.get()) != bytes.size()) {
      return errno_error(path_, ": write failed: ");
    }
    return Status();
  }
  Status flush() override {
    if (!file_) return Status();
    if (std::fflush(file_.get()) != 0) {
      return errno_error(path_, ": flush failed: ");
    }
    return Status();
  }
  Status close() override {
    if (!file_) return Status();
    std::FILE* f = file_.release();
    bool ok = std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
    const int saved_errno = errno;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) {
      return error(status_code_for_errno(saved_errno), path_,
                   ": cannot flush and close: ", std::strerror(saved_errno));
    }
    return Status();
  }
  const std::string& path() const override { return path_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<char[]> buffer_;  // before file_: outlives it
  std::unique_ptr<std::FILE, FileCloser> file_;
};

class LocalFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<RandomAccessFile>> open_read(const std::string& path) override {
    const std::string p = local(path);
    UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return errno_error(path, ": cannot open for reading: ");
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error(path, ": cannot stat: ");
    if (S_ISDIR(st.st_mode)) return error(path, ": is a directory, not a file");
    return std::unique_ptr<RandomAccessFile>(std::make_unique<LocalRandomAccessFile>(
        path, std::move(fd), static_cast<uint64_t>(st.st_size)));
  }

  Result<std::unique_ptr<WritableFile>> open_write(const std::string& path,
                                                   bool exclusive) override {
    std::FILE* f = std::fopen(local(path).c_str(), exclusive ? "wbx" : "wb");
    if (f == nullptr) {
      if (exclusive && errno == EEXIST) return already_exists(path, ": already exists");
      return errno_error(path, ": cannot open for writing: ");
    }
    return std::unique_ptr<WritableFile>(std::make_unique<LocalWritableFile>(path, f));
  }

  Status write_atomically(const std::string& path,
                          const std::vector<std::string_view>& pieces) override {
    return write_posix_file_atomically(local(path), pieces);
  }

  Result<std::vector<DirEntry>> list(const std::string& dir) override {
    std::error_code ec;
    std::vector<DirEntry> out;
    for (fs::directory_iterator it(local(dir), ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code stat_error;
      const fs::file_status status = it->status(stat_error);  // follows symlinks
      DirEntry entry;
      entry.name = it->path().filename().string();
      entry.is_directory = !stat_error && fs::is_directory(status);
      entry.is_regular_file = !stat_error && fs::is_regular_file(status);
      if (stat_error) entry.problem = stat_error.message();
      out.push_back(std::move(entry));
    }
    if (ec) return error(code_of(ec), "cannot list ", dir, ": ", ec.message());
    return out;
  }

  Result<bool> exists(const std::string& path) override {
    std::error_code ec;
    const bool found = fs::exists(local(path), ec);
    if (ec) return error(code_of(ec), path, ": cannot check whether it exists: ", ec.message());
    return found;
  }

  Result<bool> is_directory(const std::string& path) override {
    std::error_code ec;
    const bool dir = fs::is_directory(local(path), ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return error(code_of(ec), path, ": cannot stat: ", ec.message());
    }
    return dir;
  }

  Result<uint64_t> file_size(const std::string& path) override {
    std::error_code ec;
    const uintmax_t size = fs::file_size(local(path), ec);
    if (ec) return error(code_of(ec), path, ": cannot get the size: ", ec.message());
    return static_cast<uint64_t>(size);
  }

  Status rename(const std::string& from, const std::string& to) override {
    std::error_code ec;
    fs::rename(local(from), local(to), ec);
    if (ec) return error(code_of(ec), from, ": cannot rename to ", to, ": ", ec.message());
    return Status();
  }

  Status remove(const std::string& path) override {
    if (std::remove(local(path).c_str()) != 0 && errno != ENOENT) {
      return errno_error(path, ": cannot delete: ");
    }
    return Status();
  }

  Status make_dirs(const std::string& path) override {
    std::error_code ec;
    fs::create_directories(local(path), ec);
    if (ec) return error(code_of(ec), path, ": cannot create directory: ", ec.message());
    return Status();
  }

  bool writes_appear_whole() const override { return false; }
  bool wants_read_ahead() const override { return false; }
  size_t read_buffer_bytes() const override { return kLocalReadBuffer; }
};

}  // namespace

FileSystem& local_file_system() {
  static LocalFileSystem instance;
  return instance;
}

}  // namespace ic
