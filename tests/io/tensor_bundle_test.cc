#include "io/tensor_bundle.h"

#include <gtest/gtest.h>
#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <utility>

#include "io/file_bytes.h"
#include "io/tfrecord.h"
#include "proto/tensor_bundle.pb.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::raw_bytes;
using testing::read_file;
using testing::write_file;
using KeyValues = std::vector<std::pair<std::string, std::string>>;

std::string le32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
  return out;
}

// Every key/value of a LevelDB table, read with LevelDB's own code (not the bundle reader).
KeyValues read_table(const std::string& path) {
  leveldb::Env* env = leveldb::Env::Default();
  uint64_t size = 0;
  EXPECT_TRUE(env->GetFileSize(path, &size).ok());
  leveldb::RandomAccessFile* raw_file = nullptr;
  EXPECT_TRUE(env->NewRandomAccessFile(path, &raw_file).ok());
  std::unique_ptr<leveldb::RandomAccessFile> file(raw_file);
  leveldb::Options options;
  options.paranoid_checks = true;
  leveldb::Table* raw_table = nullptr;
  const leveldb::Status opened = leveldb::Table::Open(options, file.get(), size, &raw_table);
  EXPECT_TRUE(opened.ok()) << opened.ToString();
  std::unique_ptr<leveldb::Table> table(raw_table);
  KeyValues out;
  if (!table) return out;
  leveldb::ReadOptions read;
  read.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out.emplace_back(it->key().ToString(), it->value().ToString());
  }
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return out;
}

// An index made by hand, as TensorFlow's table builder writes one (no compression).
void write_table(const std::string& path, const KeyValues& entries) {
  leveldb::WritableFile* raw_file = nullptr;
  ASSERT_TRUE(leveldb::Env::Default()->NewWritableFile(path, &raw_file).ok());
  std::unique_ptr<leveldb::WritableFile> file(raw_file);
  leveldb::Options options;
  options.compression = leveldb::kNoCompression;
  leveldb::TableBuilder builder(options, file.get());
  for (const auto& [key, value] : entries) builder.Add(key, value);
  ASSERT_TRUE(builder.Finish().ok());
  ASSERT_TRUE(file->Close().ok());
}

class TensorBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ic_bundle_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    prefix_ = (dir_ / "model.ckpt-7").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A two-tensor bundle: "a" = [1, -2] (float32), "global_step" = 7 (int64).
  void write_small() {
    ASSERT_TRUE(write_tensor_bundle(prefix_, {{"model", "inception_v3"}},
                                    {{"global_step", DType::i64, Shape{}, &step_},
                                     {"a", DType::f32, Shape{2}, a_.data()}})
                    .ok());
  }
  std::string index() const { return bundle_index_path(prefix_); }
  std::string data() const { return bundle_data_path(prefix_); }

  // The error of reading the bundle (the test fails if it reads).
  std::string read_error() const {
    Result<CheckpointContents> r = read_tensor_bundle(prefix_);
    EXPECT_FALSE(r.ok()) << "read succeeded";
    return r.ok() ? "" : r.status().message();
  }

  fs::path dir_;
  std::string prefix_;
  std::vector<float> a_ = {1.0f, -2.0f};
  int64_t step_ = 7;
};

TEST_F(TensorBundleTest, FilesAreTensorFlowsBundleByteForByte) {
  write_small();
  EXPECT_EQ(index(), prefix_ + ".index");
  EXPECT_EQ(data(), prefix_ + ".data-00000-of-00001");
  EXPECT_EQ(bundle_data_path("p", 3, 12), "p.data-00003-of-00012");

  // The data file: tensors in name order; the metadata as TensorFlow encodes a string scalar
  // (varint64 length, masked CRC-32C of the length as uint32, the bytes).
  const std::string a_raw = raw_bytes(a_), step_raw = raw_bytes(std::vector<int64_t>{7});
  const std::string json = "{\"model\":\"inception_v3\"}";
  const uint32_t length = static_cast<uint32_t>(json.size());
  const uint32_t length_crc = crc32c(&length, 4);
  const std::string metadata_raw =
      std::string(1, static_cast<char>(json.size())) + le32(mask_crc32c(length_crc)) + json;
  EXPECT_EQ(read_file(data()), a_raw + step_raw + metadata_raw);

  // The index: a LevelDB table (footer magic 0xdb4775248b80fb57, little-endian)...
  const std::string index_bytes = read_file(index());
  ASSERT_GE(index_bytes.size(), 48u);
  EXPECT_EQ(index_bytes.substr(index_bytes.size() - 8), "\x57\xfb\x80\x8b\x24\x75\x47\xdb");
  // ...whose entries, read by LevelDB itself, are the header and one entry per tensor, with
  // the bytes protobuf gives TensorFlow's messages (built here by hand from field numbers).
  const KeyValues entries = read_table(index());
  ASSERT_EQ(entries.size(), 4u);
  // BundleHeaderProto{num_shards: 1 (field 1), version (field 3) {producer: 1}}.
  EXPECT_EQ(entries[0], (std::pair<std::string, std::string>{"", "\x08\x01\x1a\x02\x08\x01"}));
  // BundleEntryProto{dtype: DT_FLOAT (1), shape {dim {size: 2}}, size: 8, crc32c: masked}.
  EXPECT_EQ(entries[1].first, "a");
  EXPECT_EQ(entries[1].second, std::string("\x08\x01\x12\x04\x12\x02\x08\x02\x28\x08\x35", 11) +
                                   le32(mask_crc32c(crc32c(a_raw.data(), a_raw.size()))));
  // {dtype: DT_INT64 (9), shape {} (a scalar), offset: 8, size: 8, crc32c}.
  EXPECT_EQ(entries[2].first, "global_step");
  EXPECT_EQ(entries[2].second, std::string("\x08\x09\x12\x00\x20\x08\x28\x08\x35", 9) +
                                   le32(mask_crc32c(crc32c(step_raw.data(), 8))));
  // {dtype: DT_STRING (7), shape {}, offset: 16, size, crc32c over the lengths as uint32, the
  // length checksum's bytes and the string}.
  EXPECT_EQ(entries[3].first, kBundleMetadataKey);
  uint32_t crc = crc32c_extend(length_crc, metadata_raw.data() + 1, 4);
  crc = crc32c_extend(crc, json.data(), json.size());
  EXPECT_EQ(entries[3].second, std::string("\x08\x07\x12\x00\x20\x10\x28", 7) +
                                   static_cast<char>(metadata_raw.size()) + "\x35" +
                                   le32(mask_crc32c(crc)));

  // And our generated messages decode the hand-built bytes to the same fields.
  tensorflow::BundleEntryProto entry;
  ASSERT_TRUE(entry.ParseFromString(entries[1].second));
  EXPECT_EQ(entry.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(entry.shape().dim_size(), 1);
  EXPECT_EQ(entry.shape().dim(0).size(), 2);
  EXPECT_EQ(entry.size(), 8);
}

TEST_F(TensorBundleTest, RoundTripIsBitExact) {
  const float nan_payload = [] {
    const uint32_t bits = 0x7fc01234u;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }();
  const std::vector<float> weights = {
      0.0f, -0.0f, 1e-38f, nan_payload, std::numeric_limits<float>::infinity(), 3.25f};
  const std::vector<uint16_t> half = {0x3f80, 0xc000, 0x7f80};
  const std::vector<int32_t> ints = {-1, 0, 2147483647};
  const std::vector<float> empty;
  const std::map<std::string, std::string> metadata = {
      {"flags", "--a=\"b\" \\c\nd"}, {"model", "r\xc3\xa9sum\xc3\xa9"}, {"empty", ""}};
  ASSERT_TRUE(write_tensor_bundle(prefix_, metadata,
                                  {{"Z/weights", DType::f32, Shape{2, 3}, weights.data()},
                                   {"A/bf16", DType::bf16, Shape{3}, half.data()},
                                   {"M/ints", DType::i32, Shape{1, 3, 1}, ints.data()},
                                   {"E/empty", DType::f32, Shape{0, 4}, empty.data()},
                                   {"global_step", DType::i64, Shape{}, &step_}})
                  .ok());
  Result<CheckpointContents> back = read_tensor_bundle(prefix_);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->metadata, metadata);
  ASSERT_EQ(back->tensors.size(), 5u);
  std::vector<std::string> names;
  for (const TensorEntry& t : back->tensors) names.push_back(t.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"A/bf16", "E/empty", "M/ints", "Z/weights", "global_step"}));
  const TensorEntry* w = back->find("Z/weights");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::f32);
  EXPECT_EQ(w->shape, (Shape{2, 3}));
  EXPECT_EQ(w->bytes, raw_bytes(weights));  // bit for bit, NaN payload included
  EXPECT_EQ(back->find("A/bf16")->dtype, DType::bf16);
  EXPECT_EQ(back->find("A/bf16")->bytes, raw_bytes(half));
  EXPECT_EQ(back->find("M/ints")->shape, (Shape{1, 3, 1}));
  EXPECT_EQ(back->find("M/ints")->bytes, raw_bytes(ints));
  EXPECT_EQ(back->find("E/empty")->shape, (Shape{0, 4}));
  EXPECT_TRUE(back->find("E/empty")->bytes.empty());
  EXPECT_EQ(back->find("global_step")->dtype, DType::i64);
  EXPECT_EQ(back->find("global_step")->shape, Shape{});
  EXPECT_EQ(back->find("global_step")->bytes, raw_bytes(std::vector<int64_t>{7}));
}

TEST_F(TensorBundleTest, WritingRejectsBadNames) {
  const float x = 1;
  for (const std::string& bad : {std::string(""), std::string(kBundleMetadataKey)}) {
    Status s = write_tensor_bundle(prefix_, {}, {{bad, DType::f32, Shape{}, &x}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("invalid tensor name"), std::string::npos) << s.message();
  }
  Status twice = write_tensor_bundle(
      prefix_, {}, {{"x", DType::f32, Shape{}, &x}, {"x", DType::f32, Shape{}, &x}});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("duplicate tensor name x"), std::string::npos);
  EXPECT_FALSE(fs::exists(index()));
}

TEST_F(TensorBundleTest, FlippedDataByteIsACrcMismatchNamingFileAndTensor) {
  write_small();
  std::string bytes = read_file(data());
  bytes[9] ^= 0x01;  // inside global_step (bytes 8..15)
  write_file(data(), bytes);
  const std::string message = read_error();
  EXPECT_NE(message.find(data()), std::string::npos) << message;
  EXPECT_NE(message.find("tensor global_step"), std::string::npos) << message;
  EXPECT_NE(message.find("CRC-32C mismatch"), std::string::npos) << message;

  // In the metadata string: its own length checksum or the entry's CRC catches it.
  write_small();
  bytes = read_file(data());
  bytes[bytes.size() - 3] ^= 0x40;
  write_file(data(), bytes);
  const std::string metadata_message = read_error();
  EXPECT_NE(metadata_message.find(kBundleMetadataKey), std::string::npos) << metadata_message;
}

// LevelDB allocates whatever a block handle claims; a hostile index claiming a 32 GiB index
// block (or data block) is refused before LevelDB sees it (found by fuzz/fuzz_tensor_bundle).
TEST_F(TensorBundleTest, BlockHandlesOutsideTheIndexFileAreRefusedBeforeReading) {
  write_small();
  const std::string original = read_file(index());
  ASSERT_GT(original.size(), 48u);
  // A footer whose metaindex handle is (0, 0) and whose index handle is (0, 2^35).
  std::string footer = {0x00, 0x00, 0x00};
  uint64_t size = uint64_t{1} << 35;
  while (size >= 0x80) {
    footer += static_cast<char>((size & 0x7f) | 0x80);
    size >>= 7;
  }
  footer += static_cast<char>(size);
  footer.resize(40, '\0');
  footer += original.substr(original.size() - 8);  // the magic number
  write_file(index(), original.substr(0, original.size() - 48) + footer);
  const std::string message = read_error();
  EXPECT_NE(message.find(index()), std::string::npos) << message;
  EXPECT_NE(message.find("the footer points outside the file"), std::string::npos) << message;
}

TEST_F(TensorBundleTest, TruncatedOrMissingDataFileNamesFileAndTensor) {
  write_small();
  const std::string bytes = read_file(data());
  write_file(data(), bytes.substr(0, 12));
  std::string message = read_error();
  EXPECT_NE(message.find(data()), std::string::npos) << message;
  EXPECT_NE(message.find("tensor global_step"), std::string::npos) << message;
  EXPECT_NE(message.find("file truncated?"), std::string::npos) << message;

  fs::remove(data());
  message = read_error();
  EXPECT_NE(message.find(data() + ": cannot open"), std::string::npos) << message;
}

TEST_F(TensorBundleTest, TruncatedOrMissingIndexNamesTheIndex) {
  write_small();
  const std::string bytes = read_file(index());
  for (const size_t keep : {size_t{0}, size_t{10}, bytes.size() / 2, bytes.size() - 1}) {
    write_file(index(), bytes.substr(0, keep));
    const std::string message = read_error();
    EXPECT_NE(message.find(index()), std::string::npos) << keep << ": " << message;
  }
  fs::remove(index());
  EXPECT_NE(read_error().find(index() + ": cannot open"), std::string::npos);
}

TEST_F(TensorBundleTest, EveryFlippedIndexByteIsAnErrorOrHarmless) {
  write_small();
  const Result<CheckpointContents> good = read_tensor_bundle(prefix_);
  ASSERT_TRUE(good.ok());
  const std::string bytes = read_file(index());
  // The footer (last 48 bytes) starts with the metaindex block's handle: varint64 offset.
  size_t metaindex_offset = 0;
  for (size_t p = bytes.size() - 48, shift = 0;; ++p, shift += 7) {
    metaindex_offset |= static_cast<size_t>(bytes[p] & 0x7f) << shift;
    if ((bytes[p] & 0x80) == 0) break;
  }
  ASSERT_GT(metaindex_offset, 50u);  // the data block holds every entry
  size_t errors = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x10;
    write_file(index(), flipped);
    Result<CheckpointContents> r = read_tensor_bundle(prefix_);
    if (r.ok()) {
      // Only bytes no reader looks at may change silently: those after the data block (the
      // metaindex block, unused without a filter; its handle and the padding in the footer).
      EXPECT_GE(i, metaindex_offset);
      EXPECT_EQ(r->metadata, good->metadata) << i;
      ASSERT_EQ(r->tensors.size(), good->tensors.size()) << i;
      for (size_t t = 0; t < r->tensors.size(); ++t) {
        EXPECT_EQ(r->tensors[t].bytes, good->tensors[t].bytes) << i;
      }
    } else {
      ++errors;
      EXPECT_NE(r.status().message().find(index()), std::string::npos)
          << i << ": " << r.status().message();
    }
  }
  EXPECT_GE(errors, metaindex_offset + 20);  // the data block, the index block, the magic
}

// A hand-made index around one float tensor "w" = {1, 2} in a matching data file; `edit`
// spoils one part.
struct BadIndexCase {
  const char* what;
  std::function<void(tensorflow::BundleHeaderProto&, tensorflow::BundleEntryProto&)> edit;
  const char* expected;
};

TEST_F(TensorBundleTest, BadHeadersAndEntriesAreRefusedByName) {
  const std::vector<float> w = {1.0f, 2.0f};
  const std::string w_raw = raw_bytes(w);
  using Header = tensorflow::BundleHeaderProto;
  using Entry = tensorflow::BundleEntryProto;
  const std::vector<BadIndexCase> cases = {
      {"dtype", [](Header&, Entry& e) { e.set_dtype(tensorflow::DT_DOUBLE); },
       "tensor w has dtype DT_DOUBLE"},
      {"size", [](Header&, Entry& e) { e.set_size(4); }, "tensor w holds 4 bytes but"},
      {"shape", [](Header&, Entry& e) { e.mutable_shape()->mutable_dim(0)->set_size(-1); },
       "tensor w has a negative dimension"},
      {"overflow",
       [](Header&, Entry& e) {
         e.mutable_shape()->mutable_dim(0)->set_size(int64_t{1} << 40);
         e.mutable_shape()->add_dim()->set_size(int64_t{1} << 40);
       },
       "tensor w has an element count that overflows"},
      {"offset", [](Header&, Entry& e) { e.set_offset(int64_t{1} << 62); }, "outside the data"},
      {"negative offset", [](Header&, Entry& e) { e.set_offset(-8); }, "negative offset"},
      {"shard", [](Header&, Entry& e) { e.set_shard_id(1); }, "names data shard 1 of 1"},
      {"slices", [](Header&, Entry& e) { e.add_slices(); }, "partitioned variable"},
      {"string", [](Header&, Entry& e) { e.set_dtype(tensorflow::DT_STRING); },
       "tensor w has dtype DT_STRING"},
      {"crc", [](Header&, Entry& e) { e.set_crc32c(e.crc32c() + 1); }, "CRC-32C mismatch"},
      {"endianness", [](Header& h, Entry&) { h.set_endianness(Header::BIG); }, "big-endian"},
      {"shards", [](Header& h, Entry&) { h.set_num_shards(0); }, "num_shards 0"},
      {"min_consumer", [](Header& h, Entry&) { h.mutable_version()->set_min_consumer(2); },
       "needs a reader of version 2"},
      {"bad_consumers", [](Header& h, Entry&) { h.mutable_version()->add_bad_consumers(1); },
       "disallows reader version 1"},
  };
  for (const BadIndexCase& c : cases) {
    Header header;
    header.set_num_shards(1);
    header.mutable_version()->set_producer(1);
    Entry entry;
    entry.set_dtype(tensorflow::DT_FLOAT);
    entry.mutable_shape()->add_dim()->set_size(2);
    entry.set_size(8);
    entry.set_crc32c(mask_crc32c(crc32c(w_raw.data(), w_raw.size())));
    c.edit(header, entry);
    write_table(index(), {{"", header.SerializeAsString()}, {"w", entry.SerializeAsString()}});
    write_file(data(), w_raw);
    const std::string message = read_error();
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.what << ": " << message;
    const bool about_data = std::string(c.what) == "offset" || std::string(c.what) == "crc";
    EXPECT_NE(message.find(about_data ? data() : index()), std::string::npos)
        << c.what << ": " << message;
  }

  // No header entry first; an entry that is not a BundleEntryProto.
  write_table(index(), {{"w", "x"}});
  EXPECT_NE(read_error().find("the first entry is not the header"), std::string::npos);
  Header header;
  header.set_num_shards(1);
  write_table(index(), {{"", header.SerializeAsString()}, {"w", "\xff\xff\xff"}});
  EXPECT_NE(read_error().find("the entry of tensor w does not parse"), std::string::npos);
}

TEST_F(TensorBundleTest, ReadsBundlesWithoutMetadataAndWithSeveralShards) {
  // What a TensorFlow Saver on two devices writes: two data files, no metadata entry.
  const std::vector<float> a = {1.5f}, b = {-2.5f, 4.0f};
  const std::string a_raw = raw_bytes(a), b_raw = raw_bytes(b);
  tensorflow::BundleHeaderProto header;
  header.set_num_shards(2);
  header.mutable_version()->set_producer(1);
  tensorflow::BundleEntryProto ea, eb;
  ea.set_dtype(tensorflow::DT_FLOAT);
  ea.mutable_shape();
  ea.set_size(4);
  ea.set_crc32c(mask_crc32c(crc32c(a_raw.data(), 4)));
  eb.set_dtype(tensorflow::DT_FLOAT);
  eb.mutable_shape()->add_dim()->set_size(2);
  eb.set_shard_id(1);
  eb.set_offset(4);  // after 4 bytes of something else in shard 1
  eb.set_size(8);
  eb.set_crc32c(mask_crc32c(crc32c(b_raw.data(), 8)));
  write_table(index(), {{"", header.SerializeAsString()},
                        {"a", ea.SerializeAsString()},
                        {"b", eb.SerializeAsString()}});
  write_file(bundle_data_path(prefix_, 0, 2), a_raw);
  write_file(bundle_data_path(prefix_, 1, 2), "pad!" + b_raw);
  Result<CheckpointContents> back = read_tensor_bundle(prefix_);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->metadata.empty());
  ASSERT_EQ(back->tensors.size(), 2u);
  EXPECT_EQ(back->find("a")->bytes, a_raw);
  EXPECT_EQ(back->find("b")->bytes, b_raw);
}

}  // namespace
}  // namespace ic
