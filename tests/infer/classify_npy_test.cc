// classify's library code and the .npy reader/writer: round trips, and hostile values (.npy
// headers whose shape overflows, label files with huge numbers, top_k below one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "infer/classify.h"
#include "infer/npy.h"

namespace ic {
namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string& name) {
  return (fs::temp_directory_path() / ("ic_infer_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// A version 1.0 .npy file with `shape_text` in its header and `data_bytes` bytes of data.
std::string write_npy_header(const std::string& name, const std::string& shape_text,
                             size_t data_bytes) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(data_bytes, '\0');
  const std::string path = temp_file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(HostileNpy, ShapesWhoseProductOverflowsAreErrors) {
  // 2^62 * 4 elements wraps to 0 in int64 arithmetic: a 0-byte data section would "match".
  for (const std::string shape : {"(4611686018427387904, 4)", "(4294967296, 4294967296, 3)",
                                  "(9223372036854775807, 2)", "(3037000500, 3037000500)"}) {
    const std::string path = write_npy_header("overflow.npy", shape, 0);
    Result<NpyArray> array = read_npy(path);
    ASSERT_FALSE(array.ok()) << shape;
    EXPECT_NE(array.status().message().find(path), std::string::npos) << array.status().message();
    fs::remove(path);
  }
  const std::string path = write_npy_header("fine.npy", "(2, 3)", 24);
  Result<NpyArray> fine = read_npy(path);
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ(fine->data.size(), 6u);
  fs::remove(path);
}

TEST(Npy, RoundTripAndRefusals) {
  const std::string path = (std::filesystem::temp_directory_path() / "ic_npy_test.npy").string();
  NpyArray a{{2, 3}, {1, 2, 3, 4, 5, 6}};
  ASSERT_TRUE(write_npy(path, a).ok());
  EXPECT_EQ(std::filesystem::file_size(path) % 64, 24u % 64);  // 64-byte header + 24 data bytes
  auto b = read_npy(path);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->shape, a.shape);
  EXPECT_EQ(b->data, a.data);
  NpyArray one{{3}, {7, 8, 9}};
  ASSERT_TRUE(write_npy(path, one).ok());
  auto c = read_npy(path);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->shape, std::vector<int64_t>{3});
  {
    std::ofstream out(path, std::ios::binary);
    out << "not numpy";
  }
  EXPECT_FALSE(read_npy(path).ok());
  std::filesystem::remove(path);
}

TEST(LabelNames, AHugeLabelNumberIsAnErrorNamingFileAndLine) {
  const std::string path = temp_file("labels.txt");
  std::ofstream(path) << "1 cat\n99999999999999999999999999 dog\n";
  auto names = read_label_names(path);
  ASSERT_FALSE(names.ok());
  EXPECT_NE(names.status().message().find(path + ":2"), std::string::npos)
      << names.status().message();
  std::ofstream(path) << "1 cat\n2 dog\n";
  auto fine = read_label_names(path);
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->at(2), "dog");
  fs::remove(path);
}

TEST(ClassifyOptionsCheck, TopKBelowOneIsAnError) {
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  for (int k : {0, -1}) {
    ClassifyOptions options{"", "no-such-checkpoint.safetensors", {"x.jpg"}, k};
    auto result = classify(options, **backend);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find("top_k"), std::string::npos)
        << result.status().message();
  }
}

// Found by fuzz/fuzz_npy: a shape whose element count overflows int64 (undefined behaviour,
// then a wrapped size that could match the file), an empty array (memcpy into a null vector),
// and a shape that is not a list of integers.
TEST(Npy, HostileShapes) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "ic_npy_hostile_test.npy").string();
  auto write_header = [&](const std::string& shape, const std::string& data) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write("\x93NUMPY\x01\x00", 8);
    out.put(static_cast<char>(header.size() & 0xff));
    out.put(static_cast<char>(header.size() >> 8));
    out << header << data;
  };
  // 2^62 * 2^2 elements: the product wraps to 0, which an empty data section would match.
  write_header("(4611686018427387904, 4)", "");
  Result<NpyArray> huge = read_npy(path);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("too large"), std::string::npos)
      << huge.status().message();
  write_header("(0, 3)", "");
  Result<NpyArray> empty = read_npy(path);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(empty->data.empty());
  write_header("(2, x)", std::string(8, '\0'));
  Result<NpyArray> malformed = read_npy(path);
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("malformed shape"), std::string::npos)
      << malformed.status().message();
  std::filesystem::remove(path);
}

// The reader keeps any float; classify's check names the first value that is not finite.
TEST(Npy, TheFirstNonFiniteValueIsNamedWithItsPosition) {
  NpyArray array{{2, 3, 4, 3}, std::vector<float>(72, 0.5f)};
  EXPECT_TRUE(check_all_finite(array, "in.npy").ok());
  array.data[61] = std::numeric_limits<float>::quiet_NaN();  // ((1*3 + 2)*4 + 0)*3 + 1
  array.data[70] = std::numeric_limits<float>::infinity();
  Status status = check_all_finite(array, "in.npy");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::invalid_argument);
  EXPECT_NE(status.message().find("in.npy: value nan at flat index 61, [1,2,0,1] of shape "
                                  "[2,3,4,3]"),
            std::string::npos)
      << status.message();
  array.data[61] = 0;
  status = check_all_finite(array, "in.npy");
  EXPECT_NE(status.message().find("value inf at flat index 70, [1,2,3,1]"), std::string::npos)
      << status.message();
  NpyArray single{{3}, {1.0f, -std::numeric_limits<float>::infinity(), 2.0f}};
  EXPECT_NE(check_all_finite(single, "s.npy").message().find("-inf at flat index 1, [1]"),
            std::string::npos);
  EXPECT_TRUE(check_all_finite(NpyArray{{0, 3}, {}}, "empty.npy").ok());
}

}  // namespace
}  // namespace ic
