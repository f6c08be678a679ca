// TFRecord read throughput from any path the file-system seam takes (local or gs://):
//   gcs_read_bench --data_dir=DIR --what=records            every record of every validation-*
//                                                           file: "MB/sec <n>" "records/sec <n>"
//   gcs_read_bench --data_dir=DIR --what=pipeline --threads=2 --size=299
//                                                           one eval epoch through InputPipeline
//                                                           (decode + preprocess): "images/sec <n>"
// bench/gcs_read_bench.sh runs both on the same shards locally and from the emulator.
#include <chrono>
#include <cstdio>
#include <string>

#include "data/input_pipeline.h"
#include "io/tfrecord.h"

namespace {

bool flag(const std::string& arg, const char* name, std::string* value) {
  const std::string prefix = std::string("--") + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  *value = arg.substr(prefix.size());
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir, what = "records", threads = "2", size = "299";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!flag(arg, "data_dir", &data_dir) && !flag(arg, "what", &what) &&
        !flag(arg, "threads", &threads) && !flag(arg, "size", &size)) {
      std::fprintf(stderr, "gcs_read_bench: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  if (what == "records") {
    ic::Result<std::vector<std::string>> files = ic::list_input_files(data_dir, false, 0, 1);
    if (!files.ok()) {
      std::fprintf(stderr, "gcs_read_bench: %s\n", files.status().message().c_str());
      return 1;
    }
    uint64_t bytes = 0, records = 0;
    std::string record;
    for (const std::string& file : *files) {
      ic::Result<ic::TfRecordReader> reader = ic::TfRecordReader::open(file);
      if (!reader.ok()) {
        std::fprintf(stderr, "gcs_read_bench: %s\n", reader.status().message().c_str());
        return 1;
      }
      while (true) {
        ic::Result<bool> got = reader->read(&record);
        if (!got.ok()) {
          std::fprintf(stderr, "gcs_read_bench: %s\n", got.status().message().c_str());
          return 1;
        }
        if (!*got) break;
        bytes += record.size() + 16;
        ++records;
      }
    }
    const double s = seconds_since(start);
    std::printf("MB/sec %.1f\nrecords/sec %.0f\nbytes %llu\n", bytes / s / 1e6, records / s,
                static_cast<unsigned long long>(bytes));
    return 0;
  }
  ic::InputOptions o;
  o.data_dir = data_dir;
  o.training = false;
  o.batch_size = 32;
  o.height = o.width = std::stoi(size);
  o.num_threads = std::stoi(threads);
  ic::Result<std::unique_ptr<ic::InputPipeline>> pipeline = ic::InputPipeline::create(o);
  if (!pipeline.ok()) {
    std::fprintf(stderr, "gcs_read_bench: %s\n", pipeline.status().message().c_str());
    return 1;
  }
  int64_t images = 0;
  while (true) {
    ic::Result<std::shared_ptr<const ic::Batch>> batch = (*pipeline)->next();
    if (!batch.ok()) {
      std::fprintf(stderr, "gcs_read_bench: %s\n", batch.status().message().c_str());
      return 1;
    }
    if (!*batch) break;
    images += (*batch)->valid;
  }
  std::printf("images/sec %.1f\nimages %lld\n", images / seconds_since(start),
              static_cast<long long>(images));
  return 0;
}
