#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "io/file_bytes.h"
#include "io/json.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::raw_bytes;
using testing::read_file;
using testing::write_file;

// A fresh directory per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ic_safetensors_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// A safetensors file made by hand: 8-byte little-endian length, header, data.
std::string make_file(std::string header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

TEST_F(SafetensorsTest, RoundTripIsBitExact) {
  const float nan_payload = [] {
    uint32_t bits = 0x7fc12345u;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }();
  const std::vector<float> f32 = {1.5f,
                                  -0.0f,
                                  std::numeric_limits<float>::denorm_min(),
                                  std::numeric_limits<float>::infinity(),
                                  nan_payload,
                                  3.25e-7f};
  const std::vector<uint16_t> bf16 = {0x3f80, 0x8000, 0x7fc1, 0xff80, 0x0001};
  const std::vector<int32_t> i32 = {std::numeric_limits<int32_t>::min(), -1, 0, 7,
                                    std::numeric_limits<int32_t>::max(), 42};
  const std::vector<int64_t> i64 = {int64_t{1} << 40};

  SafetensorsFile file;
  file.metadata = {{"model", "inception_v3"},
                   {"flags", "--learning_rate=0.165 \"quoted\" back\\slash\nnewline é"},
                   {"format_version", "1"}};
  file.tensors.push_back(
      {"InceptionV3/Conv2d_1a_3x3/weights", DType::f32, Shape{1, 2, 3, 1}, raw_bytes(f32)});
  file.tensors.push_back({"bf16/odd", DType::bf16, Shape{5}, raw_bytes(bf16)});
  file.tensors.push_back({"labels", DType::i32, Shape{2, 3}, raw_bytes(i32)});
  file.tensors.push_back({"global_step", DType::i64, Shape{}, raw_bytes(i64)});
  file.tensors.push_back({"empty", DType::f32, Shape{0, 3}, ""});
  ASSERT_TRUE(write_safetensors(path("a.safetensors"), file).ok());

  Result<SafetensorsFile> back = read_safetensors(path("a.safetensors"));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->metadata, file.metadata);
  ASSERT_EQ(back->tensors.size(), file.tensors.size());
  for (const TensorEntry& want : file.tensors) {
    const TensorEntry* got = back->find(want.name);
    ASSERT_NE(got, nullptr) << want.name;
    EXPECT_EQ(got->dtype, want.dtype) << want.name;
    EXPECT_EQ(got->shape, want.shape) << want.name;
    EXPECT_EQ(got->bytes, want.bytes) << want.name;  // byte for byte, NaN payloads included
  }
  EXPECT_EQ(back->find("missing"), nullptr);
  // Nothing but the file is left in the directory (the temp file was renamed).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(SafetensorsTest, WritesTheReferenceLayoutByteForByte) {
  // What huggingface safetensors' serialize() produces for {"a": f32[2] = {1, 2}}: the header
  // padded with spaces to a multiple of 8, then the data.
  const std::vector<float> a = {1.0f, 2.0f};
  ASSERT_TRUE(
      write_safetensors(path("g.safetensors"), {}, {{"a", DType::f32, Shape{2}, a.data()}}).ok());
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  EXPECT_EQ(read_file(path("g.safetensors")), make_file(header, raw_bytes(a)));
}

TEST_F(SafetensorsTest, WriteFromViewsAlignsLargestElementsFirst) {
  const std::vector<uint16_t> b = {1, 2, 3};  // 6 bytes: an f32 after it would sit misaligned
  const std::vector<float> f = {4, 5};
  const std::vector<int64_t> s = {9};
  ASSERT_TRUE(write_safetensors(path("v.safetensors"), {{"k", "v"}},
                                {{"b", DType::bf16, Shape{3}, b.data()},
                                 {"f", DType::f32, Shape{2}, f.data()},
                                 {"s", DType::i64, Shape{}, s.data()}})
                  .ok());
  const std::string bytes = read_file(path("v.safetensors"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  EXPECT_EQ((8 + n) % 8, 0u);
  Result<JsonValue> header = parse_json(bytes.substr(8, n));
  ASSERT_TRUE(header.ok()) << header.status().message();
  auto offsets = [&](const char* name) {
    const JsonValue* o = header->find(name)->find("data_offsets");
    return std::make_pair(*o->items[0].as_int64(), *o->items[1].as_int64());
  };
  EXPECT_EQ(offsets("s"), std::make_pair(int64_t{0}, int64_t{8}));
  EXPECT_EQ(offsets("f"), std::make_pair(int64_t{8}, int64_t{16}));
  EXPECT_EQ(offsets("b"), std::make_pair(int64_t{16}, int64_t{22}));
  EXPECT_EQ(header->find("__metadata__")->find("k")->text, "v");
  Result<SafetensorsFile> back = read_safetensors(path("v.safetensors"));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->find("b")->bytes, raw_bytes(b));
  EXPECT_EQ(back->find("f")->bytes, raw_bytes(f));
}

TEST_F(SafetensorsTest, RejectsBadTensorsOnWrite) {
  const float x = 1;
  EXPECT_FALSE(write_safetensors(path("w"), {},
                                 {{"a", DType::f32, Shape{}, &x}, {"a", DType::f32, Shape{}, &x}})
                   .ok());
  EXPECT_FALSE(write_safetensors(path("w"), {}, {{"", DType::f32, Shape{}, &x}}).ok());
  EXPECT_FALSE(write_safetensors(path("w"), {}, {{"__metadata__", DType::f32, Shape{}, &x}}).ok());
  EXPECT_FALSE(write_safetensors(path("w"), {}, {{"n", DType::f32, Shape{2}, nullptr}}).ok());
  SafetensorsFile wrong_size;
  wrong_size.tensors.push_back({"t", DType::f32, Shape{3}, std::string(8, '\0')});
  const Status st = write_safetensors(path("w"), wrong_size);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("t holds 8 bytes"), std::string::npos) << st.message();
  EXPECT_FALSE(fs::exists(path("w")));
}

TEST_F(SafetensorsTest, WriteIntoMissingDirectoryFailsAndNamesIt) {
  const float x = 1;
  const std::string target = path("no/such/dir/x.safetensors");
  const Status st = write_safetensors(target, {}, {{"x", DType::f32, Shape{}, &x}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(target), std::string::npos) << st.message();
}

TEST_F(SafetensorsTest, OverwriteReplacesTheWholeFile) {
  const std::vector<float> big(1000, 1.0f), small = {2.0f};
  ASSERT_TRUE(write_safetensors(path("o"), {}, {{"x", DType::f32, Shape{1000}, big.data()}}).ok());
  ASSERT_TRUE(write_safetensors(path("o"), {}, {{"y", DType::f32, Shape{1}, small.data()}}).ok());
  Result<SafetensorsFile> back = read_safetensors(path("o"));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->tensors.size(), 1u);
  EXPECT_EQ(back->tensors[0].name, "y");
}

// Each corrupt file must be rejected with a message naming the file and the problem.
struct CorruptCase {
  const char* name;
  std::string bytes;
  const char* expected;  // a fragment of the message
};

TEST_F(SafetensorsTest, RejectsCorruptFilesWithAMessageNamingTheFile) {
  const std::string good_data(8, '\x01');
  const std::string ok_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string huge_length(8, '\0');
  huge_length[7] = 0x10;  // 2^60 bytes of header
  const std::vector<CorruptCase> cases = {
      {"short", "abc", "shorter than the 8-byte header"},
      {"huge_header", huge_length + "{}", "exceeds 100 MiB"},
      {"header_past_end", make_file(ok_header, good_data).substr(0, 20), "runs past the end"},
      {"not_json", make_file(R"({"a":{"dtype":"F32",,}})", good_data), "JSON error"},
      {"not_object", make_file("[1,2]", ""), "does not start with '{'"},
      {"truncated_data", make_file(ok_header, good_data.substr(0, 5)), "file truncated"},
      {"trailing_bytes", make_file(ok_header, good_data + "xx"), "data section has 10 bytes"},
      {"offsets_out_of_range",
       make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                 good_data),
       "data section has 8 bytes"},
      {"size_mismatch",
       make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", good_data),
       "needs 12"},
      {"gap", make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", good_data),
       "must be contiguous"},
      {"overlap",
       make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 good_data),
       "must be contiguous"},
      {"reversed_offsets",
       make_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", good_data),
       "bad data_offsets"},
      {"bad_dtype",
       make_file(R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", good_data),
       "unsupported dtype F16"},
      {"negative_dim",
       make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", good_data),
       "bad dimension"},
      {"duplicate",
       make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                 R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 good_data),
       "names a twice"},
      {"metadata_not_string", make_file(R"({"__metadata__":{"k":1}})", ""), "is not a string"},
      {"missing_offsets", make_file(R"({"a":{"dtype":"F32","shape":[2]}})", good_data),
       "data_offsets"},
  };
  for (const CorruptCase& c : cases) {
    const std::string p = path(std::string(c.name) + ".safetensors");
    write_file(p, c.bytes);
    Result<SafetensorsFile> r = read_safetensors(p);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.status().message().find(p), std::string::npos)
        << c.name << ": " << r.status().message();
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos)
        << c.name << ": " << r.status().message();
  }
  Result<SafetensorsFile> missing = read_safetensors(path("absent.safetensors"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.safetensors"), std::string::npos);
}

TEST_F(SafetensorsTest, ReadsHandMadeFileWithMetadataFirstAndPadding) {
  // As the reference library writes: __metadata__ first, tensors, trailing spaces.
  const std::vector<int32_t> v = {5, -6};
  const std::string p = path("h.safetensors");
  write_file(p, make_file(R"({"__metadata__":{"format":"pt"},"v":{"dtype":"I32","shape":[2],)"
                          R"("data_offsets":[0,8]}}    )",
                          raw_bytes(v)));
  Result<SafetensorsFile> r = read_safetensors(p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metadata.at("format"), "pt");
  EXPECT_EQ(r->tensors.at(0).bytes, raw_bytes(v));
}

TEST(Json, ParsesAndQuotes) {
  Result<JsonValue> v = parse_json(
      R"( {"s":"a\"b\\c\u00e9\ud83d\ude00","n":[0,-12,9007199254740993],"t":true,"z":null} )");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->find("s")->text, "a\"b\\c\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(*v->find("n")->items[2].as_int64(), 9007199254740993);  // exact beyond 2^53
  EXPECT_EQ(*v->find("n")->items[1].as_int64(), -12);
  EXPECT_TRUE(v->find("t")->boolean);
  EXPECT_EQ(v->find("z")->kind, JsonValue::Kind::null);
  EXPECT_FALSE(parse_json("{\"a\":1.5}")->find("a")->as_int64().has_value());
  EXPECT_FALSE(parse_json("{\"a\":99999999999999999999}")->find("a")->as_int64().has_value());
  EXPECT_FALSE(parse_json("{\"a\":1,}").ok());
  EXPECT_FALSE(parse_json("\"\\ud800\"").ok());
  EXPECT_FALSE(parse_json(std::string(100, '[') + std::string(100, ']')).ok());  // too deep
  EXPECT_EQ(json_quote("a\"b\\\n\x01"), "\"a\\\"b\\\\\\n\\u0001\"");
  Result<JsonValue> round = parse_json(json_quote("x\"\t\x1f y"));
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->text, "x\"\t\x1f y");
}

}  // namespace
}  // namespace ic
