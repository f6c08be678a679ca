// The one seam every file the programs read or write goes through. A path is either a local
// path (no scheme, or file://) or an object URL (gs://bucket/object); file_system_for() picks
// the implementation by scheme, and any other scheme (s3://, http://, a "gs:/x" typo) is an
// error naming the path, never a local folder named "gs:".
//
// Object stores have no directories and no appends: "directories" are name prefixes ending in
// '/', make_dirs does nothing there, and a written object becomes visible whole when its
// upload completes (see docs/formats.md for what that means for checkpoints and event files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ic {

// Byte ranges of one file or object, read by offset.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // The size when opened.
  virtual uint64_t size() const = 0;
  // Reads exactly `n` bytes at `offset`; an error names the path and offset.
  virtual Status read(uint64_t offset, size_t n, char* out) = 0;
  virtual const std::string& path() const = 0;
};

// A new file or object written front to back.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(std::string_view bytes) = 0;
  // Makes everything appended so far visible to other readers: locally a flush to the OS; on
  // an object store a rewrite of the whole object (for small files that grow: event files).
  virtual Status flush() = 0;
  // Makes the file durable and complete (fsync; the final upload). A file destroyed without
  // close() is left as the last flush() left it, and a never-flushed object is never created.
  virtual Status close() = 0;
  virtual const std::string& path() const = 0;
};

struct DirEntry {
  std::string name;  // the last path component, without a trailing '/'
  bool is_directory = false;
  bool is_regular_file = true;  // false for directories, devices, sockets...
  std::string problem;          // why the entry cannot be examined (a symlink loop); "" if fine
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual Result<std::unique_ptr<RandomAccessFile>> open_read(const std::string& path) = 0;
  // exclusive: fail (already_exists) when `path` exists (event files never clobber another
  // writer's). Every FileSystem error says not_found for a missing file or object.
  virtual Result<std::unique_ptr<WritableFile>> open_write(const std::string& path,
                                                           bool exclusive = false) = 0;
  // Never seen half-written: locally temp file (<path>.tmp-<pid>-<n>) + fsync + rename +
  // directory fsync; on an object store one upload (objects appear whole).
  virtual Status write_atomically(const std::string& path,
                                  const std::vector<std::string_view>& pieces) = 0;
  // What is directly in `dir` (files and subdirectories), in no particular order. A missing
  // directory is an empty list on an object store and an error locally.
  virtual Result<std::vector<DirEntry>> list(const std::string& dir) = 0;
  virtual Result<bool> exists(const std::string& path) = 0;
  virtual Result<bool> is_directory(const std::string& path) = 0;
  virtual Result<uint64_t> file_size(const std::string& path) = 0;
  // Replaces `to`; on an object store a server-side copy then a delete (not atomic: `to` is
  // complete when it appears, `from` may linger after a crash).
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // Deletes a file; a missing one is not an error.
  virtual Status remove(const std::string& path) = 0;
  virtual Status make_dirs(const std::string& path) = 0;
  // Whether an open_write() file appears whole at close() and not before (object stores), so
  // that writers need no temp name + rename to publish complete files.
  virtual bool writes_appear_whole() const = 0;
  // How much a sequential reader should buffer: small locally, large ranges for objects.
  virtual size_t read_buffer_bytes() const = 0;
  // Whether sequential readers should fetch the next block while the current one is used.
  virtual bool wants_read_ahead() const = 0;
};

// The implementation for `path`'s scheme; an error naming the path for an unknown scheme.
Result<FileSystem*> file_system_for(const std::string& path);
// The local implementation (for the few files that are local by nature).
FileSystem& local_file_system();

// Whether `path` starts with "<scheme>://" (or looks like it was meant to: "gs:/x").
bool has_url_scheme(const std::string& path);
// The local path `path` names (itself, or a file:// URL without the scheme); nullopt for any
// other URL (an object, or an unknown scheme).
std::optional<std::string> local_path(const std::string& path);
// `dir` + '/' + `name` without doubling the '/'; `name` absolute (or a URL) is returned as is.
std::string join_path(const std::string& dir, const std::string& name);
// The path without its last component ("." for a bare local name; "gs://b" for "gs://b/x").
std::string parent_path(const std::string& path);
// The last component ("x" for "gs://b/d/x" and "/d/x").
std::string base_name(const std::string& path);

// Conveniences over file_system_for(path).
Result<std::string> read_file_to_string(const std::string& path, uint64_t max_bytes);
Status write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces);
Result<bool> path_exists(const std::string& path);
Result<bool> path_is_directory(const std::string& path);
Status make_dirs(const std::string& path);
Status remove_file(const std::string& path);
Status rename_file(const std::string& from, const std::string& to);
// Full paths (join_path(dir, name)) of the files directly in `dir` whose names start with
// `name_prefix`, sorted.
Result<std::vector<std::string>> list_files(const std::string& dir,
                                            const std::string& name_prefix = "");
// Copies a file or object to another path, on the same storage or across (a local file to
// gs://), in blocks; `to` appears whole when its storage's writes do, else it is written in
// place (callers that publish it write to a temp name and rename).
Status copy_file(const std::string& from, const std::string& to);
// The last `max_bytes` bytes of a file (all of it when it is smaller): the end of a log.
Result<std::string> read_file_tail(const std::string& path, uint64_t max_bytes);

// A sequential reader over a RandomAccessFile with one large buffer. With read_ahead, the
// block after the buffer is fetched in the background while the buffer is consumed (for
// object stores, where each fill is a request with a round trip).
class BufferedReader {
 public:
  BufferedReader(std::unique_ptr<RandomAccessFile> file, size_t buffer_bytes,
                 bool read_ahead = false);
  ~BufferedReader();
  BufferedReader(const BufferedReader&) = delete;
  BufferedReader& operator=(const BufferedReader&) = delete;
  // Reads up to `n` bytes; returns how many (fewer only at the end of the file).
  Result<size_t> read(char* out, size_t n);
  void seek(uint64_t offset);
  uint64_t size() const { return file_->size(); }
  const std::string& path() const { return file_->path(); }

 private:
  Status fill(uint64_t at);
  void start_read_ahead();

  std::unique_ptr<RandomAccessFile> file_;
  size_t capacity_;
  bool read_ahead_;
  std::unique_ptr<char[]> buffer_;
  uint64_t buffer_start_ = 0;  // file offset of buffer_[0]
  size_t buffer_size_ = 0;
  uint64_t position_ = 0;
  // The block being fetched ahead: [next_start_, next_start_ + next_size_) into next_buffer_.
  std::unique_ptr<char[]> next_buffer_;
  uint64_t next_start_ = 0;
  size_t next_size_ = 0;
  std::future<Status> next_;  // last: waited for before the buffers and the file go
};

}  // namespace ic
