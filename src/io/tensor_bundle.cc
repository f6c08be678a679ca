#include "io/tensor_bundle.h"

#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "io/file_system.h"
#include "io/json.h"
#include "io/leveldb_table_check.h"
#include "io/tfrecord.h"
#include "proto/tensor_bundle.pb.h"

namespace ic {

static_assert(std::endian::native == std::endian::little,
              "bundles are written little-endian, straight from memory");

namespace {

// TensorFlow's kTensorBundleVersion / kTensorBundleMinProducer: what we write and accept.
constexpr int kBundleVersion = 1;
constexpr int kBundleMinProducer = 0;
// TensorFlow names data files with five-digit shard numbers.
constexpr int kMaxShards = 99999;
// An index holds one small entry per tensor; anything near this size is not an index.
constexpr uint64_t kMaxIndexBytes = uint64_t{256} << 20;
// TensorFlow's TensorShape limit.
constexpr int kMaxRank = 254;

std::optional<tensorflow::DataType> to_tf_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return tensorflow::DT_FLOAT;
    case DType::bf16: return tensorflow::DT_BFLOAT16;
    case DType::i32: return tensorflow::DT_INT32;
    case DType::i64: return tensorflow::DT_INT64;
    case DType::u8: return tensorflow::DT_UINT8;
    case DType::s8: return tensorflow::DT_INT8;
  }
  return std::nullopt;
}

std::optional<DType> from_tf_dtype(int dtype) {
  switch (dtype) {
    case tensorflow::DT_FLOAT: return DType::f32;
    case tensorflow::DT_BFLOAT16: return DType::bf16;
    case tensorflow::DT_INT32: return DType::i32;
    case tensorflow::DT_INT64: return DType::i64;
    case tensorflow::DT_UINT8: return DType::u8;
    case tensorflow::DT_INT8: return DType::s8;
    default: return std::nullopt;
  }
}

std::string tf_dtype_name(int dtype) {
  if (tensorflow::DataType_IsValid(dtype)) {
    return tensorflow::DataType_Name(static_cast<tensorflow::DataType>(dtype));
  }
  return "DataType " + std::to_string(dtype);
}

void put_varint64(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// TensorFlow checksums a string's length as the uint32 it fits in (older bundles stored
// uint32 lengths), else as uint64.
uint32_t extend_with_length(uint32_t crc, uint64_t length) {
  if (length <= UINT32_MAX) {
    const auto l32 = static_cast<uint32_t>(length);
    return crc32c_extend(crc, &l32, sizeof(l32));
  }
  return crc32c_extend(crc, &length, sizeof(length));
}

// A DT_STRING tensor's bytes in the data file, as TensorFlow's BundleWriter lays them out:
//   varint64 length of each element | uint32 masked CRC-32C of the lengths | the elements.
// `crc` covers the lengths (as extend_with_length), the 4 checksum bytes and the elements.
std::string encode_strings(const std::vector<std::string>& elements, uint32_t* crc) {
  std::string out;
  uint32_t c = 0;
  for (const std::string& e : elements) {
    put_varint64(e.size(), &out);
    c = extend_with_length(c, e.size());
  }
  const uint32_t length_checksum = mask_crc32c(c);
  out.append(reinterpret_cast<const char*>(&length_checksum), sizeof(length_checksum));
  c = crc32c_extend(c, &length_checksum, sizeof(length_checksum));
  for (const std::string& e : elements) {
    out += e;
    c = crc32c_extend(c, e.data(), e.size());
  }
  *crc = c;
  return out;
}

// The inverse of encode_strings over exactly `bytes`; checks the length checksum.
Result<std::vector<std::string>> decode_strings(const std::string& bytes, uint64_t count,
                                                uint32_t* crc) {
  if (count > bytes.size()) {
    return data_loss(count, " string elements cannot fit in ", bytes.size(), " bytes");
  }
  std::vector<uint64_t> lengths;
  size_t pos = 0;
  uint32_t c = 0;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= bytes.size() || shift > 63) return data_loss("string length ", i, " is malformed");
      const auto b = static_cast<unsigned char>(bytes[pos++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80u) == 0) break;
    }
    lengths.push_back(v);
    c = extend_with_length(c, v);
  }
  uint32_t length_checksum = 0;
  if (bytes.size() - pos < sizeof(length_checksum)) return data_loss("no length checksum");
  std::memcpy(&length_checksum, bytes.data() + pos, sizeof(length_checksum));
  pos += sizeof(length_checksum);
  if (unmask_crc32c(length_checksum) != c) return data_loss("string length checksum mismatch");
  c = crc32c_extend(c, &length_checksum, sizeof(length_checksum));
  std::vector<std::string> out;
  for (const uint64_t length : lengths) {
    if (length > bytes.size() - pos) return data_loss("string element runs past the entry's size");
    out.emplace_back(bytes, pos, length);
    c = crc32c_extend(c, bytes.data() + pos, length);
    pos += length;
  }
  if (pos != bytes.size()) return data_loss(bytes.size() - pos, " bytes after the last string");
  *crc = c;
  return out;
}

// LevelDB's table code reads and writes through these; we keep the bytes in memory so the
// index can be written with write_file_atomically and read with one validated read.
class StringSink final : public leveldb::WritableFile {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  leveldb::Status Append(const leveldb::Slice& data) override {
    out_->append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }

 private:
  std::string* out_;
};

class StringSource final : public leveldb::RandomAccessFile {
 public:
  explicit StringSource(const std::string& bytes) : bytes_(bytes) {}
  // A read past the end comes back short; the table code reports that as truncation.
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* /*scratch*/) const override {
    if (offset > bytes_.size()) {
      *result = leveldb::Slice();
      return leveldb::Status::IOError("read past the end of the index");
    }
    *result = leveldb::Slice(bytes_.data() + offset, std::min<uint64_t>(n, bytes_.size() - offset));
    return leveldb::Status::OK();
  }

 private:
  const std::string& bytes_;
};

leveldb::Options table_options() {
  leveldb::Options options;
  options.compression = leveldb::kNoCompression;  // what TensorFlow writes (and all it reads
                                                  // before 1.1)
  options.filter_policy = nullptr;
  options.paranoid_checks = true;  // verify the footer's and index block's checksums on open
  return options;
}

struct PendingWrite {
  std::string name;
  tensorflow::BundleEntryProto entry;
  std::string_view bytes;
};

}  // namespace

std::string bundle_index_path(const std::string& prefix) { return prefix + ".index"; }

std::string bundle_data_path(const std::string& prefix, int shard, int num_shards) {
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard, num_shards);
  return prefix + suffix;
}

Status write_tensor_bundle(const std::string& prefix,
                           const std::map<std::string, std::string>& metadata,
                           const std::vector<TensorView>& tensors) {
  const std::string data_path = bundle_data_path(prefix);
  const std::string index_path = bundle_index_path(prefix);
  std::vector<PendingWrite> pending;
  pending.reserve(tensors.size() + 1);
  std::set<std::string_view> names;
  for (const TensorView& t : tensors) {
    if (t.name.empty() || t.name == kBundleMetadataKey) {
      return error(index_path, ": invalid tensor name \"", t.name, "\"");
    }
    if (!names.insert(t.name).second) return error(index_path, ": duplicate tensor name ", t.name);
    const std::optional<uint64_t> size = tensor_byte_size(t.shape, t.dtype);
    if (!size)
      return error(index_path, ": tensor ", t.name, " has an invalid shape ", t.shape.str());
    if (*size > 0 && t.data == nullptr)
      return error(index_path, ": tensor ", t.name, " has no data");
    PendingWrite w;
    w.name = t.name;
    w.entry.set_dtype(*to_tf_dtype(t.dtype));
    tensorflow::TensorShapeProto* shape = w.entry.mutable_shape();
    for (const int64_t d : t.shape.dims()) shape->add_dim()->set_size(d);
    w.bytes = std::string_view(static_cast<const char*>(t.data), *size);
    w.entry.set_crc32c(mask_crc32c(crc32c(w.bytes.data(), w.bytes.size())));
    pending.push_back(std::move(w));
  }
  // The metadata: a JSON object in a DT_STRING scalar.
  std::string json = "{";
  for (const auto& [key, value] : metadata) {
    if (json.size() > 1) json += ",";
    json += json_quote(key) + ":" + json_quote(value);
  }
  json += "}";
  uint32_t metadata_crc = 0;
  const std::string metadata_bytes = encode_strings({json}, &metadata_crc);
  {
    PendingWrite w;
    w.name = kBundleMetadataKey;
    w.entry.set_dtype(tensorflow::DT_STRING);
    w.entry.mutable_shape();  // a scalar: present, no dimensions
    w.entry.set_crc32c(mask_crc32c(metadata_crc));
    w.bytes = metadata_bytes;
    pending.push_back(std::move(w));
  }
  std::sort(pending.begin(), pending.end(),
            [](const PendingWrite& a, const PendingWrite& b) { return a.name < b.name; });

  std::vector<std::string_view> pieces;
  pieces.reserve(pending.size());
  uint64_t offset = 0;
  for (PendingWrite& w : pending) {
    w.entry.set_shard_id(0);
    w.entry.set_offset(static_cast<int64_t>(offset));
    w.entry.set_size(static_cast<int64_t>(w.bytes.size()));
    offset += w.bytes.size();
    pieces.push_back(w.bytes);
  }
  // As TensorFlow's BundleWriter, create the prefix's directory.
  IC_RETURN_IF_ERROR(make_dirs(parent_path(prefix)));
  IC_RETURN_IF_ERROR(write_file_atomically(data_path, pieces));

  tensorflow::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(tensorflow::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kBundleVersion);
  header.mutable_version()->set_min_consumer(0);
  std::string index;
  StringSink sink(&index);
  leveldb::TableBuilder builder(table_options(), &sink);
  builder.Add("", header.SerializeAsString());
  for (const PendingWrite& w : pending) builder.Add(w.name, w.entry.SerializeAsString());
  const leveldb::Status finished = builder.Finish();
  if (!finished.ok()) return error(index_path, ": building the table: ", finished.ToString());
  return write_file_atomically(index_path, {index});
}

namespace {

Result<std::string> read_whole_file(const std::string& path, uint64_t max_bytes) {
  Result<std::string> bytes = read_file_to_string(path, max_bytes);
  if (!bytes.ok()) return bytes.status().with_context("reading the index");
  return bytes;
}

Status check_header(const tensorflow::BundleHeaderProto& header) {
  if (header.num_shards() < 1 || header.num_shards() > kMaxShards) {
    return data_loss("header: num_shards ", header.num_shards(), " (allowed: 1 to ", kMaxShards,
                     ")");
  }
  if (header.endianness() != tensorflow::BundleHeaderProto::LITTLE) {
    return error("header: the bundle is big-endian; only little-endian bundles are read");
  }
  const tensorflow::VersionDef& v = header.version();
  if (v.producer() < kBundleMinProducer) {
    return error("header: producer version ", v.producer(), " is below the oldest supported (",
                 kBundleMinProducer, ")");
  }
  if (v.min_consumer() > kBundleVersion) {
    return error("header: the bundle needs a reader of version ", v.min_consumer(),
                 " or newer; this one is ", kBundleVersion);
  }
  for (const int bad : v.bad_consumers()) {
    if (bad == kBundleVersion) {
      return error("header: the bundle disallows reader version ", kBundleVersion);
    }
  }
  return Status();
}

// Validates an entry's dtype, shape and size; returns the element count.
Result<uint64_t> check_entry(const tensorflow::BundleEntryProto& entry, int num_shards) {
  if (entry.slices_size() > 0) {
    return error("is a slice of a partitioned variable, which is not supported");
  }
  const tensorflow::TensorShapeProto& shape = entry.shape();
  if (shape.unknown_rank()) return data_loss("has an unknown rank");
  if (shape.dim_size() > kMaxRank) return data_loss("has rank ", shape.dim_size());
  uint64_t count = 1;
  for (const auto& dim : shape.dim()) {
    if (dim.size() < 0) return data_loss("has a negative dimension ", dim.size());
    const auto d = static_cast<uint64_t>(dim.size());
    if (d != 0 && count > UINT64_MAX / d) return data_loss("has an element count that overflows");
    count *= d;
  }
  if (entry.shard_id() < 0 || entry.shard_id() >= num_shards) {
    return data_loss("names data shard ", entry.shard_id(), " of ", num_shards);
  }
  if (entry.offset() < 0 || entry.size() < 0) {
    return data_loss("has a negative offset or size (", entry.offset(), ", ", entry.size(), ")");
  }
  if (entry.dtype() == tensorflow::DT_STRING) return count;
  const std::optional<DType> dtype = from_tf_dtype(entry.dtype());
  if (!dtype) {
    return error("has dtype ", tf_dtype_name(entry.dtype()),
                 " (readable: DT_FLOAT, DT_BFLOAT16, DT_INT32, DT_INT64, DT_UINT8, DT_INT8)");
  }
  const uint64_t element = dtype_size(*dtype);
  if (count > UINT64_MAX / element) return data_loss("has a byte size that overflows");
  if (static_cast<uint64_t>(entry.size()) != count * element) {
    return data_loss("holds ", entry.size(), " bytes but ", tf_dtype_name(entry.dtype()), " of ",
                     count, " elements needs ", count * element);
  }
  return count;
}

// One data file, opened on first use. Entries are read in name order, which is the order
// they were written in: a buffered reader turns them into a few large reads (one request per
// 8 MiB from a bucket instead of one per tensor).
struct DataShard {
  std::string path;
  std::unique_ptr<BufferedReader> file;
  uint64_t size = 0;
};

Result<std::string> read_entry_bytes(DataShard& shard, const tensorflow::BundleEntryProto& entry) {
  if (!shard.file) {
    IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(shard.path));
    IC_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->open_read(shard.path));
    shard.file = std::make_unique<BufferedReader>(std::move(file), fs->read_buffer_bytes(),
                                                  fs->wants_read_ahead());
    shard.size = shard.file->size();
  }
  const auto offset = static_cast<uint64_t>(entry.offset());
  const auto size = static_cast<uint64_t>(entry.size());
  if (offset > shard.size || size > shard.size - offset) {
    return data_loss(shard.path, ": bytes [", offset, ", ", offset + size,
                     ") lie outside the data file's ", shard.size, " bytes (file truncated?)");
  }
  std::string bytes(size, '\0');
  shard.file->seek(offset);
  IC_ASSIGN_OR_RETURN(const size_t got, shard.file->read(bytes.data(), bytes.size()));
  if (got != bytes.size()) return data_loss(shard.path, ": file shrank while reading");
  return bytes;
}

Result<std::map<std::string, std::string>> parse_metadata_json(const std::string& json) {
  Result<JsonValue> parsed = parse_json(json);
  if (!parsed.ok()) return parsed.status();
  if (parsed->kind != JsonValue::Kind::object) return data_loss("is not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : parsed->members) {
    if (value.kind != JsonValue::Kind::string)
      return data_loss("value of ", key, " is not a string");
    out[key] = value.text;
  }
  return out;
}

}  // namespace

Result<CheckpointContents> read_tensor_bundle(const std::string& prefix) {
  const std::string index_path = bundle_index_path(prefix);
  IC_ASSIGN_OR_RETURN(const std::string index, read_whole_file(index_path, kMaxIndexBytes));
  // LevelDB allocates whatever size a block handle claims: check them all first.
  IC_RETURN_IF_ERROR(check_table_block_handles(index, index_path));
  const leveldb::Options options = table_options();
  StringSource source(index);
  leveldb::Table* raw_table = nullptr;
  leveldb::Status opened = leveldb::Table::Open(options, &source, index.size(), &raw_table);
  if (!opened.ok())
    return data_loss(index_path, ": not a readable index table: ", opened.ToString());
  const std::unique_ptr<leveldb::Table> table(raw_table);
  leveldb::ReadOptions read_options;
  read_options.verify_checksums = true;
  read_options.fill_cache = false;
  const std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read_options));

  it->SeekToFirst();
  if (!it->Valid() || !it->key().empty()) {
    const std::string why = it->status().ok() ? "" : ": " + it->status().ToString();
    return data_loss(index_path, ": the first entry is not the header (key \"\")", why);
  }
  tensorflow::BundleHeaderProto header;
  if (!header.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
    return data_loss(index_path, ": the header entry does not parse");
  }
  Status header_ok = check_header(header);
  if (!header_ok.ok()) return header_ok.with_context(index_path);

  std::vector<DataShard> shards(static_cast<size_t>(header.num_shards()));
  for (int i = 0; i < header.num_shards(); ++i) {
    shards[static_cast<size_t>(i)].path = bundle_data_path(prefix, i, header.num_shards());
  }
  CheckpointContents contents;
  std::string previous_key;
  for (it->Next(); it->Valid(); it->Next()) {
    const std::string name = it->key().ToString();
    if (name <= previous_key) {
      return data_loss(index_path, ": keys out of order (", name, " after ", previous_key, ")");
    }
    previous_key = name;
    tensorflow::BundleEntryProto entry;
    if (!entry.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return data_loss(index_path, ": the entry of tensor ", name, " does not parse");
    }
    Result<uint64_t> count = check_entry(entry, header.num_shards());
    if (!count.ok())
      return error(count.status().code(), index_path, ": tensor ", name, " ",
                   count.status().message());
    DataShard& shard = shards[static_cast<size_t>(entry.shard_id())];
    Result<std::string> bytes = read_entry_bytes(shard, entry);
    if (!bytes.ok()) return bytes.status().with_context("tensor " + name);
    uint32_t actual_crc = 0;
    if (entry.dtype() == tensorflow::DT_STRING) {
      if (name != kBundleMetadataKey || *count != 1) {
        return error(index_path, ": tensor ", name, " has dtype DT_STRING; only the scalar ",
                     kBundleMetadataKey, " may");
      }
      Result<std::vector<std::string>> strings = decode_strings(*bytes, *count, &actual_crc);
      if (!strings.ok()) {
        return data_loss(shard.path, ": tensor ", name, ": ", strings.status().message());
      }
      Result<std::map<std::string, std::string>> metadata = parse_metadata_json(strings->front());
      if (!metadata.ok()) {
        return data_loss(shard.path, ": tensor ", name, " (checkpoint metadata) ",
                         metadata.status().message());
      }
      contents.metadata = std::move(*metadata);
    } else {
      actual_crc = crc32c(bytes->data(), bytes->size());
    }
    if (actual_crc != unmask_crc32c(entry.crc32c())) {
      return data_loss(shard.path, ": tensor ", name, ": CRC-32C mismatch in bytes [",
                       entry.offset(), ", ", entry.offset() + entry.size(), ") (data corrupted)");
    }
    if (entry.dtype() == tensorflow::DT_STRING) continue;
    TensorEntry tensor;
    tensor.name = name;
    tensor.dtype = *from_tf_dtype(entry.dtype());
    std::vector<int64_t> dims;
    for (const auto& dim : entry.shape().dim()) dims.push_back(dim.size());
    tensor.shape = Shape(std::move(dims));
    tensor.bytes = std::move(*bytes);
    contents.tensors.push_back(std::move(tensor));
  }
  if (!it->status().ok()) {
    return data_loss(index_path, ": reading the table: ", it->status().ToString());
  }
  return contents;
}

}  // namespace ic
