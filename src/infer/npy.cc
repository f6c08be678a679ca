#include "infer/npy.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "io/file_system.h"

namespace ic {
namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes

// The value text after 'key': in the header dict, up to the next ',' at depth 0 or '}'.
Result<std::string> dict_value(const std::string& header, const std::string& key,
                               const std::string& path) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return data_loss(path, ": .npy header has no '", key, "'");
  size_t pos = header.find(':', at);
  if (pos == std::string::npos) return data_loss(path, ": malformed .npy header");
  ++pos;
  int depth = 0;
  size_t end = pos;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' && depth == 0) || c == '}') break;
  }
  std::string value = header.substr(pos, end - pos);
  const size_t first = value.find_first_not_of(" ");
  const size_t last = value.find_last_not_of(" ");
  return first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
}

// "[1,299,299,3]": a shape or a position in one.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream text;
  text << '[';
  for (size_t i = 0; i < shape.size(); ++i) text << (i ? "," : "") << shape[i];
  text << ']';
  return text.str();
}

}  // namespace

Result<NpyArray> read_npy(const std::string& path) {
  Result<std::string> read = read_file_to_string(path, uint64_t{16} << 30);
  if (!read.ok()) return read.status().with_context("cannot read .npy");
  const std::string& bytes = *read;
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) {
    return data_loss(path, ": not a .npy file (bad magic)");
  }
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return data_loss(path, ": truncated .npy header");
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    header_start = 12;
  } else {
    return error(path, ": unsupported .npy version ", int{major});
  }
  if (bytes.size() < header_start + header_len) return data_loss(path, ": truncated .npy header");
  const std::string header = bytes.substr(header_start, header_len);
  IC_ASSIGN_OR_RETURN(std::string descr, dict_value(header, "descr", path));
  if (descr != "'<f4'" && descr != "'float32'") {
    return error(path, ": dtype ", descr, " is not supported (need float32 '<f4')");
  }
  IC_ASSIGN_OR_RETURN(std::string fortran, dict_value(header, "fortran_order", path));
  if (fortran != "False") return error(path, ": Fortran-order arrays are not supported");
  IC_ASSIGN_OR_RETURN(std::string shape_text, dict_value(header, "shape", path));
  NpyArray array;
  int64_t count = 1;
  std::string dims = shape_text;
  for (char& c : dims) {
    if (c == '(' || c == ')' || c == ',') c = ' ';
  }
  std::istringstream dim_stream(dims);
  int64_t dim;
  while (dim_stream >> dim) {
    if (dim < 0) return data_loss(path, ": negative dimension in shape ", shape_text);
    // Checked so that count * sizeof(float) below cannot overflow either.
    if (dim != 0 && count > INT64_MAX / static_cast<int64_t>(sizeof(float)) / dim) {
      return data_loss(path, ": shape ", shape_text, " is too large");
    }
    array.shape.push_back(dim);
    // Overflow-checked: a hostile header's product must not wrap into a small, "matching" size.
    if (__builtin_mul_overflow(count, dim, &count) || count > INT64_MAX / int64_t{sizeof(float)}) {
      return data_loss(path, ": shape ", shape_text, " has more elements than any file can hold");
    }
  }
  if (!dim_stream.eof())
    return data_loss(path, ": malformed shape ", shape_text, " in .npy header");
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != static_cast<size_t>(count) * sizeof(float)) {
    return data_loss(path, ": shape ", shape_text, " needs ", count * 4,
                     " bytes of data, file has ", bytes.size() - data_start);
  }
  array.data.resize(static_cast<size_t>(count));
  if (count > 0) {  // memcpy from or to a null pointer is undefined even for 0 bytes
    std::memcpy(array.data.data(), bytes.data() + data_start, array.data.size() * sizeof(float));
  }
  return array;
}

Status check_all_finite(const NpyArray& array, const std::string& path) {
  const auto bad =
      std::find_if(array.data.begin(), array.data.end(), [](float v) { return !std::isfinite(v); });
  if (bad == array.data.end()) return Status();
  const int64_t flat = bad - array.data.begin();
  // Row-major: the last dimension varies fastest. (No dimension is 0: the array has a value.)
  std::vector<int64_t> coordinates(array.shape.size());
  int64_t rest = flat;
  for (size_t i = array.shape.size(); i-- > 0;) {
    coordinates[i] = rest % array.shape[i];
    rest /= array.shape[i];
  }
  return invalid_argument(path, ": value ", *bad, " at flat index ", flat, ", ",
                          shape_text(coordinates), " of shape ", shape_text(array.shape),
                          ", is not finite (the model's input must be finite numbers)");
}

Status write_npy(const std::string& path, const NpyArray& array) {
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i) {
    shape += std::to_string(array.shape[i]) + (array.shape.size() == 1 ? "," : "");
    if (i + 1 < array.shape.size()) shape += ", ";
  }
  shape += ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends with '\n'.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char prefix[4] = {1, 0, static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  // Through the file-system seam: a local path or a gs:// object, never seen half-written.
  return write_file_atomically(path,
                               {std::string_view(kMagic, 6), std::string_view(prefix, 4), header,
                                std::string_view(reinterpret_cast<const char*>(array.data.data()),
                                                 array.data.size() * sizeof(float))});
}

}  // namespace ic
