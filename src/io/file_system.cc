#include "io/file_system.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "io/gcs_file_system.h"

namespace ic {
namespace {

constexpr std::string_view kFileScheme = "file://";
constexpr std::string_view kGcsScheme = "gs://";

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The length of "<scheme>:" when `path` begins with a URL-like scheme (letters, digits, '+',
// '-', '.'; at least two characters so that "C:" style names stay local), else 0.
size_t scheme_length(const std::string& path) {
  size_t i = 0;
  while (i < path.size() && (std::isalnum(static_cast<unsigned char>(path[i])) || path[i] == '+' ||
                             path[i] == '-' || path[i] == '.')) {
    ++i;
  }
  if (i < 2 || i >= path.size() || path[i] != ':' ||
      !std::isalpha(static_cast<unsigned char>(path[0]))) {
    return 0;
  }
  return i + 1;
}

// Where the object part of a URL starts ("gs://bucket/" is 12 for a 6-letter bucket), or 0.
size_t root_length(const std::string& path) {
  const size_t scheme = scheme_length(path);
  if (scheme == 0 || path.compare(scheme, 2, "//") != 0) return 0;
  const size_t slash = path.find('/', scheme + 2);
  return slash == std::string::npos ? path.size() : slash + 1;
}

}  // namespace

bool has_url_scheme(const std::string& path) { return scheme_length(path) > 0; }

std::optional<std::string> local_path(const std::string& path) {
  if (!has_url_scheme(path)) return path;
  if (starts_with(path, kFileScheme)) return path.substr(kFileScheme.size());
  return std::nullopt;
}

Result<FileSystem*> file_system_for(const std::string& path) {
  if (!has_url_scheme(path) || starts_with(path, kFileScheme)) return &local_file_system();
  if (starts_with(path, kGcsScheme)) {
    if (path.size() == kGcsScheme.size() || path[kGcsScheme.size()] == '/') {
      return error(path, ": a gs:// path needs a bucket name (gs://bucket/path)");
    }
    return gcs_file_system();
  }
  const std::string scheme = path.substr(0, scheme_length(path));
  if (path.compare(scheme.size(), 2, "//") != 0) {
    return error(path, ": malformed URL (expected ", scheme,
                 "//bucket/path; for a local path "
                 "that contains ':', write ./",
                 path, ")");
  }
  return error(path, ": unsupported storage scheme ", scheme,
               "// (supported: local paths, file://, gs://)");
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (name.empty()) return dir;
  if (dir.empty() || name.front() == '/' || has_url_scheme(name)) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string parent_path(const std::string& path) {
  std::string p = path;
  const size_t root = root_length(p);
  while (p.size() > std::max<size_t>(root, 1) && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (root > 0 && slash + 1 <= root) return p.substr(0, root - 1);  // "gs://b/x" -> "gs://b"
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string base_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

Result<std::string> read_file_to_string(const std::string& path, uint64_t max_bytes) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  IC_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->open_read(path));
  if (file->size() > max_bytes) {
    return error(path, ": ", file->size(), " bytes is more than the ", max_bytes, " expected");
  }
  std::string bytes(file->size(), '\0');
  IC_RETURN_IF_ERROR(file->read(0, bytes.size(), bytes.data()));
  return bytes;
}

Status write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  return fs->write_atomically(path, pieces);
}

Result<bool> path_exists(const std::string& path) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  return fs->exists(path);
}

Result<bool> path_is_directory(const std::string& path) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  return fs->is_directory(path);
}

Status make_dirs(const std::string& path) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  return fs->make_dirs(path);
}

Status remove_file(const std::string& path) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  return fs->remove(path);
}

Status rename_file(const std::string& from, const std::string& to) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(from));
  IC_ASSIGN_OR_RETURN(FileSystem * to_fs, file_system_for(to));
  if (fs != to_fs) return error("cannot rename ", from, " to ", to, ": different storage");
  return fs->rename(from, to);
}

Result<std::vector<std::string>> list_files(const std::string& dir,
                                            const std::string& name_prefix) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(dir));
  IC_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->list(dir));
  std::vector<std::string> out;
  for (const DirEntry& e : entries) {
    if (!e.is_directory && e.name.rfind(name_prefix, 0) == 0) {
      out.push_back(join_path(dir, e.name));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status copy_file(const std::string& from, const std::string& to) {
  IC_ASSIGN_OR_RETURN(FileSystem * from_fs, file_system_for(from));
  IC_ASSIGN_OR_RETURN(FileSystem * to_fs, file_system_for(to));
  IC_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> in, from_fs->open_read(from));
  IC_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> out, to_fs->open_write(to));
  constexpr uint64_t kBlock = 8 << 20;
  std::string block;
  for (uint64_t at = 0; at < in->size(); at += kBlock) {
    block.resize(static_cast<size_t>(std::min(kBlock, in->size() - at)));
    IC_RETURN_IF_ERROR(in->read(at, block.size(), block.data()));
    IC_RETURN_IF_ERROR(out->append(block));
  }
  return out->close();
}

Result<std::string> read_file_tail(const std::string& path, uint64_t max_bytes) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  IC_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->open_read(path));
  const uint64_t n = std::min(max_bytes, file->size());
  std::string bytes(static_cast<size_t>(n), '\0');
  IC_RETURN_IF_ERROR(file->read(file->size() - n, bytes.size(), bytes.data()));
  return bytes;
}

BufferedReader::BufferedReader(std::unique_ptr<RandomAccessFile> file, size_t buffer_bytes,
                               bool read_ahead)
    : file_(std::move(file)),
      capacity_(std::max<size_t>(buffer_bytes, 4096)),
      read_ahead_(read_ahead),
      buffer_(std::make_unique_for_overwrite<char[]>(capacity_)) {}

BufferedReader::~BufferedReader() {
  if (next_.valid()) next_.wait();  // its thread writes into next_buffer_
}

void BufferedReader::seek(uint64_t offset) { position_ = offset; }

void BufferedReader::start_read_ahead() {
  const uint64_t at = buffer_start_ + buffer_size_;
  if (!read_ahead_ || at >= file_->size()) return;
  if (!next_buffer_) next_buffer_ = std::make_unique_for_overwrite<char[]>(capacity_);
  next_start_ = at;
  next_size_ = static_cast<size_t>(std::min<uint64_t>(capacity_, file_->size() - at));
  next_ =
      std::async(std::launch::async, [file = file_.get(), at, n = next_size_,
                                      out = next_buffer_.get()] { return file->read(at, n, out); });
}

Status BufferedReader::fill(uint64_t at) {
  const size_t want = static_cast<size_t>(std::min<uint64_t>(capacity_, file_->size() - at));
  if (next_.valid()) {
    const Status fetched = next_.get();
    // The block fetched ahead is used when it is the one wanted; otherwise (a seek, or a
    // failure, which the read below reports if it recurs) it is dropped.
    if (fetched.ok() && next_start_ == at && next_size_ == want) {
      std::swap(buffer_, next_buffer_);
      buffer_start_ = at;
      buffer_size_ = want;
      start_read_ahead();
      return Status();
    }
  }
  buffer_start_ = at;
  buffer_size_ = want;
  Status filled = file_->read(at, want, buffer_.get());
  if (!filled.ok()) {
    buffer_size_ = 0;
    return filled;
  }
  start_read_ahead();
  return Status();
}

Result<size_t> BufferedReader::read(char* out, size_t n) {
  size_t done = 0;
  while (done < n && position_ < file_->size()) {
    const bool buffered = position_ >= buffer_start_ && position_ < buffer_start_ + buffer_size_;
    if (!buffered) {
      // A request at least as large as the buffer goes straight into `out` (unless the block
      // fetched ahead starts here).
      const bool ahead_here = next_.valid() && next_start_ == position_;
      if (n - done >= capacity_ && !ahead_here) {
        const size_t direct =
            static_cast<size_t>(std::min<uint64_t>(n - done, file_->size() - position_));
        IC_RETURN_IF_ERROR(file_->read(position_, direct, out + done));
        position_ += direct;
        done += direct;
        continue;
      }
      IC_RETURN_IF_ERROR(fill(position_));
    }
    const size_t at = static_cast<size_t>(position_ - buffer_start_);
    const size_t take = std::min(n - done, buffer_size_ - at);
    std::memcpy(out + done, buffer_.get() + at, take);
    position_ += take;
    done += take;
  }
  return done;
}

}  // namespace ic
