#include "data/imagenet_converter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "data/example.h"
#include "data/image_codec.h"
#include "io/file_system.h"
#include "io/posix_file.h"
#include "io/tfrecord.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

constexpr int kReencodeQuality = 100;  // as imagenet_to_gcs.py's encode_jpeg(quality=100)

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpeg" || ext == ".jpg";
}

// Sorted entries named like images directly inside `dir`. An entry that is no image file (a
// dangling symbolic link, a directory or FIFO named x.JPEG) is listed too: reading it fails,
// and it is skipped, named and counted like an image that does not decode, rather than left
// out unseen. A symbolic link loop is an error: the tree itself is broken.
// Every filesystem call below takes an error_code: a symlink loop or an unreadable entry in the
// raw tree must be an error naming it, not an exception.
Result<std::vector<std::string>> list_images(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_image_name(it->path())) continue;
    std::error_code stat_error;
    (void)it->status(stat_error);  // follows symbolic links
    if (stat_error && stat_error != std::errc::no_such_file_or_directory) {
      return error(it->path().string(), ": cannot read: ", stat_error.message());
    }
    out.push_back(it->path().string());
  }
  if (ec) return error(dir.string(), ": cannot list: ", ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<std::string>> list_subdirs(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code stat_error;
    const bool directory = it->is_directory(stat_error);
    if (stat_error) return error(it->path().string(), ": cannot read: ", stat_error.message());
    if (directory) out.push_back(it->path().filename().string());
  }
  if (ec) return error(dir.string(), ": cannot list: ", ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

// What a file that is not a regular file is, for the skip report.
const char* file_kind(mode_t mode) {
  static constexpr struct {
    mode_t type;
    const char* name;
  } kKinds[] = {{S_IFDIR, "a directory"},
                {S_IFIFO, "a FIFO"},
                {S_IFSOCK, "a socket"},
                {S_IFCHR, "a character device"},
                {S_IFBLK, "a block device"}};
  for (const auto& kind : kKinds) {
    if ((mode & S_IFMT) == kind.type) return kind.name;
  }
  return "not a regular file";
}

// The bytes of one image file. Opened without blocking, so that a FIFO named like an image does
// not wait for a writer forever; anything but a regular file is then refused by its kind.
Result<std::string> read_whole_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    const int open_errno = errno;
    std::error_code ec;
    if (open_errno == ENOENT && fs::is_symlink(fs::symlink_status(path, ec))) {
      return error("a symbolic link to a missing file (", fs::read_symlink(path, ec).string(), ")");
    }
    return error("cannot open: ", std::strerror(open_errno));
  }
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) return error("cannot stat: ", std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return error("not an image file: ", file_kind(info.st_mode));
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd.get(), chunk, sizeof(chunk));
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      return error("read error: ", std::strerror(errno));
    }
    bytes.append(chunk, static_cast<size_t>(got));
  }
  return bytes;
}

Result<std::vector<RawImage>> list_validation(const fs::path& raw) {
  const fs::path dir = raw / "validation";
  std::vector<RawImage> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return error(dir.string(), ": cannot read: ", ec.message());
    }
    return out;
  }
  const fs::path labels_path = raw / "synset_labels.txt";
  if (!fs::exists(labels_path, ec)) {
    if (ec) return error(labels_path.string(), ": cannot read: ", ec.message());
    IC_ASSIGN_OR_RETURN(auto synsets, list_subdirs(dir));
    for (const auto& synset : synsets) {
      IC_ASSIGN_OR_RETURN(auto files, list_images(dir / synset));
      for (auto& f : files) out.push_back({std::move(f), synset});
    }
    std::sort(out.begin(), out.end(), [](const RawImage& a, const RawImage& b) {
      return fs::path(a.path).filename() < fs::path(b.path).filename();
    });
    if (out.empty()) return error(labels_path.string(), ": missing (needed for validation/*.JPEG)");
    return out;
  }
  IC_ASSIGN_OR_RETURN(auto files, list_images(dir));
  std::ifstream in(labels_path);
  std::vector<std::string> synsets;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) synsets.push_back(line);
  }
  if (synsets.size() != files.size()) {
    return error(labels_path.string(), ": ", synsets.size(), " labels for ", files.size(),
                 " images in ", dir.string(), " (one line per image, in sorted file order)");
  }
  for (size_t i = 0; i < files.size(); ++i) out.push_back({std::move(files[i]), synsets[i]});
  return out;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return buf;
}

// Counts of one shard, filled by the thread that writes it.
struct ShardStats {
  int64_t written = 0, reencoded = 0, skipped = 0;
  std::vector<std::string> skipped_images;
};

}  // namespace

std::string shard_name(const std::string& prefix, int shard, int num_shards) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "-%05d-of-%05d", shard, num_shards);
  return prefix + buf;
}

ShardRange shard_range(int64_t count, int num_shards, int shard) {
  const int64_t chunk = (count + num_shards - 1) / num_shards;
  const int64_t begin = std::min(count, chunk * shard);
  return {begin, std::min(count, begin + chunk)};
}

Result<RawImageNet> list_raw_imagenet(const std::string& raw_data_dir, uint64_t shuffle_seed) {
  if (has_url_scheme(raw_data_dir)) {  // a tree of image files: read from local disk only
    return error("--raw_data_dir=", raw_data_dir,
                 ": the raw images are read from a local directory (the shards may go to a "
                 "bucket: --local_scratch_dir=gs://...)");
  }
  const fs::path raw(raw_data_dir);
  RawImageNet out;
  const fs::path train_dir = raw / "train";
  std::error_code ec;
  const bool has_train = fs::is_directory(train_dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return error(train_dir.string(), ": cannot read: ", ec.message());
  }
  if (has_train) {
    IC_ASSIGN_OR_RETURN(auto synsets, list_subdirs(train_dir));
    for (const auto& synset : synsets) {
      IC_ASSIGN_OR_RETURN(auto files, list_images(train_dir / synset));
      for (auto& f : files) out.train.push_back({std::move(f), synset});
    }
    // Fisher-Yates with our own index draw: std::shuffle's algorithm is not specified, so
    // the order would differ between standard libraries.
    std::mt19937_64 rng(shuffle_seed);
    for (size_t i = out.train.size(); i > 1; --i) {
      const size_t j = static_cast<size_t>(rng() % i);
      std::swap(out.train[i - 1], out.train[j]);
    }
  }
  IC_ASSIGN_OR_RETURN(out.validation, list_validation(raw));
  if (out.train.empty() && out.validation.empty()) {
    return error(raw_data_dir, ": no images in train/<synset>/*.JPEG or validation/*.JPEG");
  }
  std::set<std::string> synsets;
  for (const auto& image : out.train) synsets.insert(image.synset);
  for (const auto& image : out.validation) synsets.insert(image.synset);
  int64_t label = 1;  // 0 is the background class
  for (const auto& synset : synsets) out.labels[synset] = label++;
  return out;
}

Result<PreparedImage> prepare_image(std::string_view bytes, bool reencode_grayscale,
                                    int64_t max_pixels) {
  PreparedImage out;
  const ImageFormat format = sniff_image_format(bytes);
  if (format == ImageFormat::unknown) {
    return error("neither JPEG nor PNG data (", bytes.size(), " bytes)");
  }
  IC_RETURN_IF_ERROR(check_image_pixels(bytes, max_pixels));
  if (format == ImageFormat::jpeg) {
    IC_ASSIGN_OR_RETURN(const JpegHeader header, read_jpeg_header(bytes));
    if (!header.is_cmyk && !(reencode_grayscale && header.components == 1)) {
      // Stored unchanged. The check decode runs at 1/8 scale: every scan is still entropy
      // decoded (so truncated or corrupt data fails as at full size) but the IDCT and colour
      // conversion shrink 64-fold, which makes the converter ~1.6x faster.
      RgbImage check;
      IC_RETURN_IF_ERROR(decode_image_into(bytes, 8, &check, max_pixels));
      out.height = header.height;
      out.width = header.width;
      out.encoded.assign(bytes);
      return out;
    }
  }
  // PNG data, CMYK/YCCK or grayscale JPEG: decode to RGB and re-encode, as imagenet_to_gcs.py.
  IC_ASSIGN_OR_RETURN(const RgbImage image, decode_image(bytes, 1, max_pixels));
  out.height = image.height;
  out.width = image.width;
  IC_ASSIGN_OR_RETURN(out.encoded, encode_jpeg(image, kReencodeQuality));
  out.reencoded = true;
  return out;
}

std::string format_summary(const SplitSummary& s) {
  std::string out = s.split + ": " + std::to_string(s.images) + " images, " +
                    std::to_string(s.shards) + " shards (" + std::to_string(s.shards_resumed) +
                    " resumed): " + std::to_string(s.written) + " written, " +
                    std::to_string(s.reencoded) + " re-encoded, " + std::to_string(s.skipped) +
                    " skipped";
  return out;
}

Status write_shards(const std::string& output_dir, std::vector<ShardJob>& jobs, int num_threads,
                    const std::function<void(size_t job_index)>& on_done) {
  // Temporary files of an interrupted earlier run are incomplete by construction.
  std::set<std::string> names;
  for (const auto& job : jobs) names.insert(job.name);
  IC_ASSIGN_OR_RETURN(FileSystem * out_fs, file_system_for(output_dir));
  IC_ASSIGN_OR_RETURN(const std::vector<std::string> existing, list_files(output_dir));
  for (const std::string& path : existing) {
    const std::string file = base_name(path);
    const size_t tmp = file.find(".tmp-");
    if (tmp != std::string::npos && names.count(file.substr(0, tmp))) (void)out_fs->remove(path);
  }
  // In a bucket a shard appears whole when its upload completes: no temp name needed.
  const std::string suffix =
      out_fs->writes_appear_whole() ? "" : ".tmp-" + std::to_string(getpid());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;  // guards first_error and serialises on_done
  Status first_error;
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size() && !failed; i = next++) {
      const std::string final_path = join_path(output_dir, jobs[i].name);
      const std::string tmp_path = final_path + suffix;
      Status status = [&]() -> Status {
        IC_ASSIGN_OR_RETURN(TfRecordWriter writer, TfRecordWriter::create(tmp_path));
        IC_RETURN_IF_ERROR(jobs[i].fill([&](std::string_view r) { return writer.write(r); }));
        IC_RETURN_IF_ERROR(writer.close());
        return tmp_path == final_path ? Status() : out_fs->rename(tmp_path, final_path);
      }();
      std::lock_guard<std::mutex> lock(mutex);
      if (!status.ok()) {
        if (tmp_path != final_path) (void)out_fs->remove(tmp_path);
        if (!failed) first_error = status;
        failed = true;
        return;
      }
      if (on_done) on_done(i);
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(num_threads, static_cast<int>(jobs.size())));
  for (int t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return first_error;
}

Result<ConversionSummary> convert_imagenet(const ConverterOptions& options) {
  if (options.train_shards < 1 || options.validation_shards < 1) {
    return error("--train_shards and --validation_shards must be at least 1 (got ",
                 options.train_shards, ", ", options.validation_shards, ")");
  }
  if (options.output_dir.empty()) return error("--local_scratch_dir is required");
  IC_RETURN_IF_ERROR(make_dirs(options.output_dir));
  IC_ASSIGN_OR_RETURN(const RawImageNet raw,
                      list_raw_imagenet(options.raw_data_dir, options.shuffle_seed));
  std::mutex log_mutex;  // workers report skipped images concurrently
  auto log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mutex);
    if (options.log) options.log(line);
  };
  log("found " + std::to_string(raw.train.size()) + " training and " +
      std::to_string(raw.validation.size()) + " validation images of " +
      std::to_string(raw.labels.size()) + " classes in " + options.raw_data_dir);

  ConversionSummary summary;
  summary.train.split = "train";
  summary.validation.split = "validation";
  struct SplitInput {
    const std::vector<RawImage>* images;
    SplitSummary* summary;
    int shards;
  };
  const SplitInput splits[] = {{&raw.validation, &summary.validation, options.validation_shards},
                               {&raw.train, &summary.train, options.train_shards}};
  struct Pending {
    const SplitInput* split;
    ShardRange range;
    std::string name;
  };
  std::vector<Pending> pending;
  int64_t images_to_do = 0;
  for (const SplitInput& split : splits) {
    split.summary->images = static_cast<int64_t>(split.images->size());
    if (split.images->empty()) continue;
    split.summary->shards = split.shards;
    for (int shard = 0; shard < split.shards; ++shard) {
      std::string name = shard_name(split.summary->split, shard, split.shards);
      const ShardRange range = shard_range(split.images->size(), split.shards, shard);
      if (options.resume) {
        IC_ASSIGN_OR_RETURN(const bool done, path_exists(join_path(options.output_dir, name)));
        if (done) {
          ++split.summary->shards_resumed;
          continue;
        }
      }
      images_to_do += range.end - range.begin;
      pending.push_back({&split, range, std::move(name)});
    }
  }
  for (const SplitInput& split : splits) {
    if (split.summary->shards_resumed > 0) {
      log(split.summary->split + ": " + std::to_string(split.summary->shards_resumed) +
          " shards already complete, kept (--resume)");
    }
  }

  // Each job fills only its own stats slot; the slots are read after the threads join.
  std::vector<ShardStats> stats(pending.size());
  std::vector<ShardJob> jobs;
  for (size_t j = 0; j < pending.size(); ++j) {
    const Pending& p = pending[j];
    ShardStats& st = stats[j];
    jobs.push_back({p.name,
                    [&p, &st, &raw, &options,
                     &log](const std::function<Status(std::string_view)>& write) -> Status {
                      for (int64_t k = p.range.begin; k < p.range.end; ++k) {
                        const RawImage& image = (*p.split->images)[k];
                        Result<PreparedImage> prepared = [&]() -> Result<PreparedImage> {
                          IC_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(image.path));
                          return prepare_image(bytes, options.reencode_grayscale,
                                               options.max_image_pixels);
                        }();
                        if (!prepared.ok()) {
                          std::string report = image.path + ": " + prepared.status().message();
                          log("skipping unreadable image " + report);
                          st.skipped_images.push_back(std::move(report));
                          ++st.skipped;
                          continue;
                        }
                        ImageExample e;
                        e.encoded = std::move(prepared->encoded);
                        e.height = prepared->height;
                        e.width = prepared->width;
                        e.label = raw.labels.at(image.synset);
                        e.synset = image.synset;
                        e.filename = fs::path(image.path).filename().string();
                        IC_RETURN_IF_ERROR(write(encode_image_example(e)));
                        ++st.written;
                        st.reencoded += prepared->reencoded ? 1 : 0;
                      }
                      return Status();
                    }});
  }

  // Progress: at most one line a second, and the last shard always.
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start - std::chrono::seconds(10);
  int64_t images_done = 0;
  size_t shards_done = 0;
  auto on_done = [&](size_t j) {
    images_done += pending[j].range.end - pending[j].range.begin;
    ++shards_done;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report < std::chrono::seconds(1) && shards_done != jobs.size()) return;
    last_report = now;
    const double elapsed = std::chrono::duration<double>(now - start).count();
    const double rate = elapsed > 0 ? images_done / elapsed : 0.0;
    const double eta = rate > 0 ? (images_to_do - images_done) / rate : 0.0;
    char line[160];
    std::snprintf(line, sizeof(line),
                  "shards %zu/%zu done, %lld/%lld images, %.1f images/sec, ETA %s", shards_done,
                  jobs.size(), static_cast<long long>(images_done),
                  static_cast<long long>(images_to_do), rate, format_duration(eta).c_str());
    log(line);
  };
  const Status written = write_shards(options.output_dir, jobs, options.num_threads, on_done);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!written.ok()) return written;
  for (size_t j = 0; j < pending.size(); ++j) {
    SplitSummary& s = *pending[j].split->summary;
    s.written += stats[j].written;
    s.reencoded += stats[j].reencoded;
    s.skipped += stats[j].skipped;
    for (auto& r : stats[j].skipped_images) s.skipped_images.push_back(std::move(r));
  }
  for (const SplitSummary* s : {&summary.train, &summary.validation}) {
    const int64_t seen = s->written + s->skipped;
    if (s->skipped > 0 && static_cast<double>(s->skipped) > options.max_bad_input_fraction * seen) {
      return data_loss(s->split, ": ", s->skipped, " of ", seen,
                       " images could not be read or decoded, more than "
                       "--max_bad_input_fraction=",
                       options.max_bad_input_fraction, " (the first: ", s->skipped_images.front(),
                       ")");
    }
  }
  return summary;
}

}  // namespace ic
