// Decode + preprocess throughput of our input path on ImageNet-like JPEGs.
//   preprocess_bench --make=200 --dir=/tmp/jpegs        writes the JPEGs (~500x375, q90)
//   preprocess_bench --dir=/tmp/jpegs --mode=train --threads=2 --passes=3
// prints "images/sec <n>" (wall clock) and "images/cpu_sec <n>" (per second of CPU time, i.e.
// per core, which a shared machine's load disturbs much less) for `threads` threads, each
// preprocessing its share of the files (held in memory) `passes` times, as the Python peer script
// does with torchvision.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "data/image_codec.h"
#include "data/preprocessing.h"
#include "data/random.h"

namespace {

struct Args {
  std::string dir = "/tmp/ic_preprocess_bench";
  int make = 0;
  std::string mode = "train";
  int threads = 1;
  int passes = 3;
  int size = 299;
};

bool parse_flag(const std::string& arg, const char* name, std::string* value) {
  const std::string prefix = std::string("--") + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  *value = arg.substr(prefix.size());
  return true;
}

// Photo-like content: a few smooth colour waves plus fine texture, so files compress to sizes
// near ImageNet's (tens of KB at q90 for 500x375).
ic::RgbImage photo_like_image(int height, int width, uint64_t seed) {
  ic::Rng rng(seed);
  ic::RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height) * width * 3);
  float freq[3][2], phase[3];
  for (int c = 0; c < 3; ++c) {
    freq[c][0] = rng.uniform(0.005f, 0.05f);
    freq[c][1] = rng.uniform(0.005f, 0.05f);
    phase[c] = rng.uniform(0.0f, 6.28f);
  }
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const float texture = rng.uniform(-18.0f, 18.0f);
      for (int c = 0; c < 3; ++c) {
        const float v =
            128 +
            80 * std::sin(freq[c][0] * x + phase[c]) * std::cos(freq[c][1] * y + phase[c] * 0.5f) +
            texture;
        image.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
    }
  }
  return image;
}

int make_images(const Args& args) {
  std::filesystem::create_directories(args.dir);
  size_t total = 0;
  for (int i = 0; i < args.make; ++i) {
    // Mostly 500x375 landscape, some portrait, as in ImageNet.
    const bool portrait = i % 4 == 3;
    ic::Result<std::string> jpeg =
        ic::encode_jpeg(photo_like_image(portrait ? 500 : 375, portrait ? 375 : 500, i), 90);
    if (!jpeg.ok()) {
      std::fprintf(stderr, "encode failed: %s\n", jpeg.status().message().c_str());
      return 1;
    }
    char name[64];
    std::snprintf(name, sizeof(name), "/img_%04d.jpg", i);
    std::ofstream(args.dir + name, std::ios::binary) << *jpeg;
    total += jpeg->size();
  }
  std::printf("wrote %d JPEGs to %s, mean %.1f KB\n", args.make, args.dir.c_str(),
              total / 1024.0 / std::max(args.make, 1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    if (parse_flag(arg, "dir", &value))
      args.dir = value;
    else if (parse_flag(arg, "make", &value))
      args.make = std::atoi(value.c_str());
    else if (parse_flag(arg, "mode", &value))
      args.mode = value;
    else if (parse_flag(arg, "threads", &value))
      args.threads = std::atoi(value.c_str());
    else if (parse_flag(arg, "passes", &value))
      args.passes = std::atoi(value.c_str());
    else if (parse_flag(arg, "size", &value))
      args.size = std::atoi(value.c_str());
    else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (args.make > 0) return make_images(args);
  if (args.mode != "train" && args.mode != "eval") {
    std::fprintf(stderr, "--mode must be train or eval, got %s\n", args.mode.c_str());
    return 2;
  }

  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(args.dir)) {
    if (entry.path().extension() == ".jpg") {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      files.push_back(bytes.str());
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "no .jpg files in %s (run with --make=200 first)\n", args.dir.c_str());
    return 1;
  }
  ic::PreprocessOptions options;
  options.training = args.mode == "train";
  options.height = options.width = args.size;

  std::atomic<int> failures{0};
  std::atomic<int64_t> images{0};
  std::atomic<int64_t> cpu_nanoseconds{0};  // summed over threads: robust to a loaded machine
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < args.threads; ++t) {
    threads.emplace_back([&, t] {
      timespec cpu_start{}, cpu_end{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_start);
      ic::PreprocessScratch scratch;
      std::vector<float> out(static_cast<size_t>(args.size) * args.size * 3);
      int64_t done = 0;
      for (int pass = 0; pass < args.passes; ++pass) {
        for (size_t i = static_cast<size_t>(t); i < files.size(); i += args.threads) {
          ic::Rng rng(static_cast<uint64_t>(pass), i);
          if (!ic::preprocess_image(files[i], {}, options, rng, &scratch, out.data()).ok()) {
            ++failures;
          }
          ++done;
        }
      }
      images += done;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_end);
      cpu_nanoseconds += (cpu_end.tv_sec - cpu_start.tv_sec) * 1000000000LL +
                         (cpu_end.tv_nsec - cpu_start.tv_nsec);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failures > 0) {
    std::fprintf(stderr, "%d images failed to preprocess\n", failures.load());
    return 1;
  }
  std::printf("images/sec %.1f\n", images.load() / seconds);
  std::printf("images/cpu_sec %.1f\n", images.load() / (cpu_nanoseconds.load() * 1e-9));
  return 0;
}
