#include "data/fake_imagenet.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "core/mix64.h"
#include "data/example.h"
#include "data/imagenet_converter.h"
#include "io/file_system.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

uint64_t split_seed(uint64_t seed, bool validation) {
  return mix64(seed) ^ (validation ? 0xA5A5ull : 0);
}

struct Rgb {
  float r, g, b;
};

// Hue in [0, 1), saturation and value in [0, 1] -> RGB in [0, 255].
Rgb hsv_to_rgb(float h, float s, float v) {
  const float h6 = (h - std::floor(h)) * 6.0f;
  const int sector = static_cast<int>(h6) % 6;
  const float f = h6 - std::floor(h6);
  const float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  Rgb c{};
  switch (sector) {
    case 0: c = {v, t, p}; break;
    case 1: c = {q, v, p}; break;
    case 2: c = {p, v, t}; break;
    case 3: c = {p, q, v}; break;
    case 4: c = {t, p, v}; break;
    default: c = {v, p, q}; break;
  }
  return {c.r * 255, c.g * 255, c.b * 255};
}

Status write_raw_tree(const FakeImageNetOptions& o, int width) {
  const fs::path root(o.output_dir);
  std::error_code ec;
  fs::create_directories(root / "validation", ec);
  if (ec) return error((root / "validation").string(), ": cannot create: ", ec.message());
  for (int64_t i = 0; i < o.num_train_images; ++i) {
    const uint64_t seed = split_seed(o.seed, false);
    const int64_t label = fake_label(seed, i, o.num_classes);
    const fs::path dir = root / "train" / fake_synset(label);
    fs::create_directories(dir, ec);
    if (ec) return error(dir.string(), ": cannot create: ", ec.message());
    IC_ASSIGN_OR_RETURN(std::string jpeg, encode_jpeg(make_fake_image(seed, i, label, o.num_classes,
                                                                      o.image_size, width),
                                                      o.jpeg_quality));
    IC_RETURN_IF_ERROR(
        write_tree_file(dir / (fake_synset(label) + "_" + std::to_string(i) + ".JPEG"), jpeg));
  }
  std::string labels;
  for (int64_t i = 0; i < o.num_validation_images; ++i) {
    const uint64_t seed = split_seed(o.seed, true);
    const int64_t label = fake_label(seed, i, o.num_classes);
    char name[48];
    std::snprintf(name, sizeof(name), "ILSVRC2012_val_%08lld.JPEG", static_cast<long long>(i + 1));
    IC_ASSIGN_OR_RETURN(std::string jpeg, encode_jpeg(make_fake_image(seed, i, label, o.num_classes,
                                                                      o.image_size, width),
                                                      o.jpeg_quality));
    IC_RETURN_IF_ERROR(write_tree_file(root / "validation" / name, jpeg));
    labels += fake_synset(label) + "\n";
  }
  return write_tree_file(root / "synset_labels.txt", labels);
}

}  // namespace

std::string fake_synset(int64_t label) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "fake%04lld", static_cast<long long>(label));
  return buf;
}

int64_t fake_label(uint64_t seed, int64_t index, int num_classes) {
  return 1 + static_cast<int64_t>(mix64(mix64(seed) + static_cast<uint64_t>(index)) %
                                  static_cast<uint64_t>(num_classes));
}

RgbImage make_fake_image(uint64_t seed, int64_t index, int64_t label, int num_classes, int height,
                         int width) {
  std::mt19937_64 rng(mix64(seed ^ mix64(static_cast<uint64_t>(index) + 1)));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  // Background: a linear gradient between two muted colours in a random direction.
  const Rgb c0 = hsv_to_rgb(u(rng), 0.2f + 0.3f * u(rng), 0.3f + 0.6f * u(rng));
  const Rgb c1 = hsv_to_rgb(u(rng), 0.2f + 0.3f * u(rng), 0.3f + 0.6f * u(rng));
  const float angle = 6.2831853f * u(rng);
  const float dx = std::cos(angle), dy = std::sin(angle);
  // Blobs: soft discs whose hue is the label's, jittered.
  struct Blob {
    float cx, cy, inv_two_r2;
    Rgb colour;
  };
  const float label_hue = static_cast<float>(label - 1) / static_cast<float>(num_classes);
  std::vector<Blob> blobs(3);
  const float size = static_cast<float>(std::min(height, width));
  for (auto& b : blobs) {
    b.cx = u(rng) * width;
    b.cy = u(rng) * height;
    const float r = size * (0.08f + 0.25f * u(rng));
    b.inv_two_r2 = 1.0f / (2 * r * r);
    b.colour =
        hsv_to_rgb(label_hue + 0.03f * (u(rng) - 0.5f), 0.6f + 0.4f * u(rng), 0.5f + 0.5f * u(rng));
  }
  // Fine texture so JPEG has detail to code, as in photographs.
  const float fx = 0.05f + 0.3f * u(rng), fy = 0.05f + 0.3f * u(rng);
  std::uniform_int_distribution<int> noise(-6, 6);
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  const float diag = std::abs(dx) * width + std::abs(dy) * height;
  const float t0 = std::min(0.0f, dx * width) + std::min(0.0f, dy * height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const float t = (dx * x + dy * y - t0) / diag;
      float px[3] = {c0.r + (c1.r - c0.r) * t, c0.g + (c1.g - c0.g) * t, c0.b + (c1.b - c0.b) * t};
      for (const Blob& b : blobs) {
        const float d2 = (x - b.cx) * (x - b.cx) + (y - b.cy) * (y - b.cy);
        const float w = 0.9f * std::exp(-d2 * b.inv_two_r2);
        px[0] += (b.colour.r - px[0]) * w;
        px[1] += (b.colour.g - px[1]) * w;
        px[2] += (b.colour.b - px[2]) * w;
      }
      const float texture = 8.0f * std::sin(fx * x) * std::sin(fy * y);
      uint8_t* out = &image.pixels[(static_cast<size_t>(y) * width + x) * 3];
      for (int c = 0; c < 3; ++c) {
        const float v = px[c] + texture + static_cast<float>(noise(rng));
        out[c] = static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 255.0f)));
      }
    }
  }
  return image;
}

Status write_tree_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return error(path, ": cannot write");
  return Status();
}

Status make_fake_imagenet(const FakeImageNetOptions& o) {
  if (o.output_dir.empty()) return error("--output_dir is required");
  if (o.num_classes < 1) return error("--num_classes must be at least 1, got ", o.num_classes);
  if (o.image_size < 1 || o.image_width < 0) {
    return error("--image_size must be at least 1, got ", o.image_size);
  }
  // Fake images are made whole in memory, one per writing thread: keep them decodable by the
  // readers' default --max_image_pixels.
  const int64_t fake_width = o.image_width > 0 ? o.image_width : o.image_size;
  if (int64_t{o.image_size} * fake_width > kDefaultMaxImagePixels) {
    return error("--image_size/--image_width of ", o.image_size, "x", fake_width,
                 " is more pixels than the readers accept (", kDefaultMaxImagePixels, ")");
  }
  if (o.train_shards < 1 || o.validation_shards < 1) {
    return error("--train_shards and --validation_shards must be at least 1");
  }
  if (o.num_train_images < 0 || o.num_validation_images < 0) {
    return error("image counts must not be negative");
  }
  if (o.jpeg_quality < 1 || o.jpeg_quality > 100) {
    return error("JPEG quality must be in [1, 100], got ", o.jpeg_quality);
  }
  const int width = o.image_width > 0 ? o.image_width : o.image_size;
  if (o.raw_layout) {  // a tree of image files to convert: local by nature
    if (has_url_scheme(o.output_dir)) {
      return error(o.output_dir, ": --raw_layout writes a local directory tree, not a URL");
    }
    std::error_code ec;
    fs::create_directories(o.output_dir, ec);
    if (ec) return error(o.output_dir, ": cannot create: ", ec.message());
    return write_raw_tree(o, width);
  }
  IC_RETURN_IF_ERROR(make_dirs(o.output_dir));

  std::vector<ShardJob> jobs;
  for (const bool validation : {false, true}) {
    const int64_t count = validation ? o.num_validation_images : o.num_train_images;
    const int shards = validation ? o.validation_shards : o.train_shards;
    const uint64_t seed = split_seed(o.seed, validation);
    const std::string prefix = validation ? "validation" : "train";
    for (int shard = 0; shard < shards; ++shard) {
      const ShardRange range = shard_range(count, shards, shard);
      jobs.push_back({shard_name(prefix, shard, shards),
                      [range, seed, width, prefix,
                       &o](const std::function<Status(std::string_view)>& write) -> Status {
                        for (int64_t i = range.begin; i < range.end; ++i) {
                          ImageExample e;
                          e.label = fake_label(seed, i, o.num_classes);
                          e.synset = fake_synset(e.label);
                          e.height = o.image_size;
                          e.width = width;
                          e.filename = prefix + "_" + std::to_string(i) + ".JPEG";
                          IC_ASSIGN_OR_RETURN(
                              e.encoded,
                              encode_jpeg(make_fake_image(seed, i, e.label, o.num_classes,
                                                          o.image_size, width),
                                          o.jpeg_quality));
                          IC_RETURN_IF_ERROR(write(encode_image_example(e)));
                        }
                        return Status();
                      }});
    }
  }
  return write_shards(o.output_dir, jobs, o.num_threads, nullptr);
}

}  // namespace ic
