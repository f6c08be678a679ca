#include "data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "data/fake_imagenet.h"
#include "data/image_codec.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

Status read_exactly(gzFile f, const std::string& path, void* out, size_t n) {
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    // gzread takes an unsigned count; read in chunks well under its limit.
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    const int got = gzread(f, p, chunk);
    if (got <= 0) {
      int code = 0;
      const char* message = gzerror(f, &code);
      return error(path, ": truncated or unreadable IDX data",
                   code != Z_OK ? std::string(" (") + message + ")" : std::string());
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Status();
}

// Reads `n` bytes into *out, growing it as the data arrives: a header that claims gigabytes
// costs memory only for the bytes the file really holds before it ends.
Status read_growing(gzFile f, const std::string& path, uint64_t n, std::vector<uint8_t>* out) {
  constexpr uint64_t kChunk = uint64_t{16} << 20;
  out->clear();
  while (out->size() < n) {
    const size_t at = out->size();
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - at, kChunk));
    out->resize(at + chunk);
    IC_RETURN_IF_ERROR(read_exactly(f, path, out->data() + at, chunk));
  }
  return Status();
}

// IDX: big-endian uint32 magic (0x00000800 | dims), then dims big-endian uint32 sizes.
Result<std::vector<uint32_t>> read_idx_header(gzFile f, const std::string& path,
                                              uint32_t want_dims) {
  uint8_t head[4];
  IC_RETURN_IF_ERROR(read_exactly(f, path, head, 4));
  if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != want_dims) {
    return error(path, ": not an IDX file of unsigned bytes with ", want_dims, " dimensions");
  }
  std::vector<uint32_t> dims(want_dims);
  for (auto& d : dims) {
    uint8_t b[4];
    IC_RETURN_IF_ERROR(read_exactly(f, path, b, 4));
    d = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  }
  return dims;
}

Result<GzFile> open_gz(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) return error(path, ": cannot open");
  return f;
}

// "<dir>/<name>" or "<dir>/<name>.gz", whichever exists.
Result<std::string> find_idx(const std::string& dir, const std::string& name) {
  for (const std::string& candidate : {name, name + ".gz"}) {
    const fs::path p = fs::path(dir) / candidate;
    std::error_code ec;  // a symlink loop: not found, no exception
    if (fs::exists(p, ec)) return p.string();
  }
  return error(dir, ": neither ", name, " nor ", name,
               ".gz found (install Debian's dataset-fashion-mnist)");
}

Result<std::string> gray_to_rgb_jpeg(const IdxImages& images, int64_t index, int quality) {
  RgbImage rgb;
  rgb.height = images.rows;
  rgb.width = images.cols;
  const size_t n = static_cast<size_t>(images.rows) * images.cols;
  rgb.pixels.resize(n * 3);
  const uint8_t* gray = &images.pixels[static_cast<size_t>(index) * n];
  for (size_t i = 0; i < n; ++i) {
    rgb.pixels[3 * i] = rgb.pixels[3 * i + 1] = rgb.pixels[3 * i + 2] = gray[i];
  }
  return encode_jpeg(rgb, quality);
}

struct Split {
  IdxImages images;
  std::vector<uint8_t> labels;
};

Result<Split> read_split(const std::string& dir, const std::string& prefix) {
  Split s;
  IC_ASSIGN_OR_RETURN(const std::string images_path, find_idx(dir, prefix + "-images-idx3-ubyte"));
  IC_ASSIGN_OR_RETURN(const std::string labels_path, find_idx(dir, prefix + "-labels-idx1-ubyte"));
  IC_ASSIGN_OR_RETURN(s.images, read_idx_images(images_path));
  IC_ASSIGN_OR_RETURN(s.labels, read_idx_labels(labels_path));
  if (static_cast<int64_t>(s.labels.size()) != s.images.count) {
    return error(labels_path, ": ", s.labels.size(), " labels for ", s.images.count, " images");
  }
  for (size_t i = 0; i < s.labels.size(); ++i) {
    if (s.labels[i] >= kFashionMnistSynsets.size()) {
      return error(labels_path, ": label ", int{s.labels[i]}, " of item ", i, " is not 0..9");
    }
  }
  return s;
}

}  // namespace

Result<IdxImages> read_idx_images(const std::string& path) {
  IC_ASSIGN_OR_RETURN(GzFile f, open_gz(path));
  IC_ASSIGN_OR_RETURN(const auto dims, read_idx_header(f.get(), path, 3));
  IdxImages out;
  out.count = dims[0];
  out.rows = static_cast<int>(dims[1]);
  out.cols = static_cast<int>(dims[2]);
  if (out.rows <= 0 || out.cols <= 0 || out.rows > 4096 || out.cols > 4096) {
    return error(path, ": implausible image size ", out.rows, "x", out.cols);
  }
  const uint64_t bytes = static_cast<uint64_t>(out.count) * out.rows * out.cols;
  if (bytes > (uint64_t{1} << 32)) return error(path, ": implausible size (", bytes, " bytes)");
  IC_RETURN_IF_ERROR(read_growing(f.get(), path, bytes, &out.pixels));
  return out;
}

Result<std::vector<uint8_t>> read_idx_labels(const std::string& path) {
  IC_ASSIGN_OR_RETURN(GzFile f, open_gz(path));
  IC_ASSIGN_OR_RETURN(const auto dims, read_idx_header(f.get(), path, 1));
  std::vector<uint8_t> labels;
  IC_RETURN_IF_ERROR(read_growing(f.get(), path, dims[0], &labels));
  return labels;
}

Result<FashionMnistSummary> fashion_mnist_to_raw(const FashionMnistOptions& o) {
  if (o.output_dir.empty()) return error("--output_dir is required");
  IC_ASSIGN_OR_RETURN(const Split train, read_split(o.input_dir, "train"));
  IC_ASSIGN_OR_RETURN(const Split validation, read_split(o.input_dir, "t10k"));
  const fs::path root(o.output_dir);
  std::error_code ec;
  for (const char* synset : kFashionMnistSynsets) {
    fs::create_directories(root / "train" / synset, ec);
    if (ec) return error((root / "train" / synset).string(), ": cannot create: ", ec.message());
  }
  fs::create_directories(root / "validation", ec);
  if (ec) return error((root / "validation").string(), ": cannot create: ", ec.message());

  FashionMnistSummary summary;
  auto limit = [](int64_t count, int64_t max) { return max > 0 ? std::min(count, max) : count; };
  summary.train_images = limit(train.images.count, o.max_train_images);
  summary.validation_images = limit(validation.images.count, o.max_validation_images);
  char name[96];
  for (int64_t i = 0; i < summary.train_images; ++i) {
    const char* synset = kFashionMnistSynsets[train.labels[i]];
    std::snprintf(name, sizeof(name), "%s_%05lld.JPEG", synset, static_cast<long long>(i));
    IC_ASSIGN_OR_RETURN(const std::string jpeg, gray_to_rgb_jpeg(train.images, i, o.jpeg_quality));
    IC_RETURN_IF_ERROR(write_tree_file(root / "train" / synset / name, jpeg));
  }
  std::string labels;
  for (int64_t i = 0; i < summary.validation_images; ++i) {
    std::snprintf(name, sizeof(name), "fashion_mnist_val_%05lld.JPEG", static_cast<long long>(i));
    IC_ASSIGN_OR_RETURN(const std::string jpeg,
                        gray_to_rgb_jpeg(validation.images, i, o.jpeg_quality));
    IC_RETURN_IF_ERROR(write_tree_file(root / "validation" / name, jpeg));
    labels += std::string(kFashionMnistSynsets[validation.labels[i]]) + "\n";
  }
  IC_RETURN_IF_ERROR(write_tree_file(root / "synset_labels.txt", labels));
  return summary;
}

}  // namespace ic
