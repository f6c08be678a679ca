#include "core/host_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace ic {
namespace {

// A cgroup v2 file holding one number, or "max" (no limit).
std::optional<size_t> read_cgroup_value(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return static_cast<size_t>(std::stoull(word));
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<size_t> meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::optional<size_t> available_host_memory() {
  std::optional<size_t> available = meminfo_available();
  const std::optional<size_t> limit = read_cgroup_value("/sys/fs/cgroup/memory.max");
  const std::optional<size_t> used = read_cgroup_value("/sys/fs/cgroup/memory.current");
  if (limit && used) {
    const size_t left = *limit > *used ? *limit - *used : 0;
    available = available ? std::min(*available, left) : left;
  }
  return available;
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

std::optional<size_t> resident_memory() {
  std::ifstream in("/proc/self/statm");
  size_t total_pages = 0, resident_pages = 0;
  if (!(in >> total_pages >> resident_pages)) return std::nullopt;
  return resident_pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

std::string format_bytes(size_t bytes) {
  char text[32];
  const double gib = static_cast<double>(bytes) / (1ull << 30);
  if (gib >= 1.0) {
    std::snprintf(text, sizeof text, "%.1f GiB", gib);
  } else {
    std::snprintf(text, sizeof text, "%zu MiB", (bytes + (1u << 19)) >> 20);
  }
  return text;
}

}  // namespace ic
