// Whole files as bytes, for the io tests that build or damage files by hand.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ic::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The in-memory bytes of `values` (little-endian on every machine we build for).
template <typename T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace ic::testing
