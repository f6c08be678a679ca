// FileSystem over GcsClient. Directories are name prefixes: "gs://b/d" lists the objects
// "d/*" (delimiter '/'), exists for a name that is an object or a prefix of objects, and
// make_dirs creates nothing. Written objects are uploaded whole at close() (and, for files
// that are flushed, at flush(): see WritableFile).
#include "io/gcs_file_system.h"

#include <chrono>
#include <mutex>

#include "io/gcs_client.h"

namespace ic {
namespace {

// Large ranges: one request per 8 MiB keeps request overhead small next to the transfer, and
// the next 8 MiB are fetched while these are used (BufferedReader's read-ahead).
constexpr size_t kGcsReadBuffer = size_t{8} << 20;
// An object that is flushed (event files) is re-uploaded at most this often, and at close.
constexpr std::chrono::seconds kMinFlushInterval{5};

std::string dir_prefix(const GcsObjectName& dir) {
  std::string prefix = dir.object;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  return prefix;
}

class GcsRandomAccessFile final : public RandomAccessFile {
 public:
  GcsRandomAccessFile(GcsClient* client, std::string path, GcsObjectName name, GcsObjectInfo info)
      : client_(client), path_(std::move(path)), name_(std::move(name)), info_(std::move(info)) {}
  uint64_t size() const override { return info_.size; }
  Status read(uint64_t offset, size_t n, char* out) override {
    if (offset > info_.size || n > info_.size - offset) {
      return data_loss(path_, ": read of bytes [", offset, ", ", offset + n, ") past the end (",
                       info_.size, " bytes)");
    }
    // The generation opened: a reader never mixes bytes of two versions of the object.
    return client_->read(name_, info_.generation, offset, n, out);
  }
  const std::string& path() const override { return path_; }

 private:
  GcsClient* client_;
  std::string path_;
  GcsObjectName name_;
  GcsObjectInfo info_;
};

class GcsWritableFile final : public WritableFile {
 public:
  GcsWritableFile(GcsClient* client, std::string path, GcsObjectName name)
      : client_(client), path_(std::move(path)), name_(std::move(name)) {}
  Status append(std::string_view bytes) override {
    if (closed_) return error(path_, ": write after close");
    data_.append(bytes);
    dirty_ = true;
    return Status();
  }
  Status flush() override {
    if (closed_ || !dirty_) return Status();
    const auto now = std::chrono::steady_clock::now();
    if (uploaded_once_ && now - last_upload_ < kMinFlushInterval) return Status();
    return upload();
  }
  Status close() override {
    if (closed_) return Status();
    closed_ = true;
    if (!dirty_ && uploaded_once_) return Status();
    return upload();
  }
  const std::string& path() const override { return path_; }

 private:
  Status upload() {
    IC_RETURN_IF_ERROR(client_->upload(name_, {data_}));
    dirty_ = false;
    uploaded_once_ = true;
    last_upload_ = std::chrono::steady_clock::now();
    return Status();
  }
  GcsClient* client_;
  std::string path_;
  GcsObjectName name_;
  std::string data_;  // the whole object: objects are written whole
  bool dirty_ = false;
  bool uploaded_once_ = false;
  bool closed_ = false;
  std::chrono::steady_clock::time_point last_upload_;
};

class GcsFileSystem final : public FileSystem {
 public:
  explicit GcsFileSystem(std::unique_ptr<GcsClient> client) : client_(std::move(client)) {}

  Result<std::unique_ptr<RandomAccessFile>> open_read(const std::string& path) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName name, object_name(path));
    IC_ASSIGN_OR_RETURN(const std::optional<GcsObjectInfo> info, client_->stat(name));
    if (!info) return not_found(path, ": cannot open for reading: no such object");
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<GcsRandomAccessFile>(client_.get(), path, name, *info));
  }

  Result<std::unique_ptr<WritableFile>> open_write(const std::string& path,
                                                   bool exclusive) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName name, object_name(path));
    if (exclusive) {
      IC_ASSIGN_OR_RETURN(const std::optional<GcsObjectInfo> info, client_->stat(name));
      if (info) return already_exists(path, ": already exists");
    }
    return std::unique_ptr<WritableFile>(
        std::make_unique<GcsWritableFile>(client_.get(), path, name));
  }

  Status write_atomically(const std::string& path,
                          const std::vector<std::string_view>& pieces) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName name, object_name(path));
    return client_->upload(name, pieces);
  }

  Result<std::vector<DirEntry>> list(const std::string& dir) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName name, parse_gcs_url(dir));
    const std::string prefix = dir_prefix(name);
    IC_ASSIGN_OR_RETURN(const GcsListing listing, client_->list(name.bucket, prefix, "/"));
    std::vector<DirEntry> out;
    for (const std::string& object : listing.objects) {
      if (object.size() > prefix.size())
        out.push_back({object.substr(prefix.size()), false, true, ""});
    }
    for (std::string p : listing.prefixes) {
      if (p.size() <= prefix.size()) continue;
      if (p.back() == '/') p.pop_back();
      out.push_back({p.substr(prefix.size()), true, false, ""});
    }
    return out;
  }

  Result<bool> exists(const std::string& path) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName name, parse_gcs_url(path));
    if (!name.object.empty()) {
      IC_ASSIGN_OR_RETURN(const std::optional<GcsObjectInfo> info, client_->stat(name));
      if (info) return true;
    }
    return is_directory(path);
  }

  Result<bool> is_directory(const std::string& path) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName name, parse_gcs_url(path));
    IC_ASSIGN_OR_RETURN(const GcsListing listing,
                        client_->list(name.bucket, dir_prefix(name), "/", 1));
    return !listing.objects.empty() || !listing.prefixes.empty() || name.object.empty();
  }

  Result<uint64_t> file_size(const std::string& path) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName name, object_name(path));
    IC_ASSIGN_OR_RETURN(const std::optional<GcsObjectInfo> info, client_->stat(name));
    if (!info) return not_found(path, ": no such object");
    return info->size;
  }

  Status rename(const std::string& from, const std::string& to) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName source, object_name(from));
    IC_ASSIGN_OR_RETURN(const GcsObjectName target, object_name(to));
    IC_RETURN_IF_ERROR(client_->copy(source, target));
    return client_->remove(source);
  }

  Status remove(const std::string& path) override {
    IC_ASSIGN_OR_RETURN(const GcsObjectName name, object_name(path));
    return client_->remove(name);
  }

  Status make_dirs(const std::string& path) override {
    return parse_gcs_url(path).status();  // prefixes need no creating
  }

  bool writes_appear_whole() const override { return true; }
  bool wants_read_ahead() const override { return true; }
  size_t read_buffer_bytes() const override { return kGcsReadBuffer; }

 private:
  static Result<GcsObjectName> object_name(const std::string& path) {
    IC_ASSIGN_OR_RETURN(GcsObjectName name, parse_gcs_url(path));
    if (name.object.empty() || name.object.back() == '/') {
      return error(path, ": names a bucket or a directory, not an object");
    }
    return name;
  }

  std::unique_ptr<GcsClient> client_;
};

}  // namespace

Result<FileSystem*> gcs_file_system() {
  static std::mutex mutex;
  static std::unique_ptr<GcsFileSystem> instance;
  std::lock_guard<std::mutex> lock(mutex);
  if (!instance) {
    IC_ASSIGN_OR_RETURN(std::unique_ptr<TokenSource> tokens, make_token_source_from_environment());
    instance = std::make_unique<GcsFileSystem>(std::make_unique<GcsClient>(
        gcs_endpoint_from_environment(), std::move(tokens), storage_retry_policy()));
  }
  return instance.get();
}

}  // namespace ic
