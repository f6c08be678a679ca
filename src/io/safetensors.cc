#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>

#include "io/file_system.h"
#include "io/json.h"

namespace ic {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; tensors are written straight from memory");

namespace {

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;  // the reference library's limit

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "F32") return DType::f32;
  if (name == "BF16") return DType::bf16;
  if (name == "I32") return DType::i32;
  if (name == "I64") return DType::i64;
  if (name == "U8") return DType::u8;
  if (name == "I8") return DType::s8;
  return std::nullopt;
}

void put_u64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
    case DType::s8: return "I8";
  }
  return "?";
}

Status write_safetensors(const std::string& path,
                         const std::map<std::string, std::string>& metadata,
                         const std::vector<TensorView>& tensors) {
  // Largest element first keeps every tensor aligned to its element size (the data section
  // starts 8-aligned), as the reference library lays files out.
  std::vector<const TensorView*> order;
  order.reserve(tensors.size());
  for (const TensorView& t : tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) {
    return dtype_size(a->dtype) > dtype_size(b->dtype);
  });

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) header += ",";
      first = false;
      header += json_quote(key) + ":" + json_quote(value);
    }
    header += "}";
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  std::vector<std::string_view> pieces;
  pieces.reserve(order.size() + 2);
  for (const TensorView* t : order) {
    if (t->name.empty() || t->name == "__metadata__") {
      return error(path, ": invalid tensor name \"", t->name, "\"");
    }
    if (!names.insert(t->name).second) return error(path, ": duplicate tensor name ", t->name);
    const std::optional<uint64_t> size = tensor_byte_size(t->shape, t->dtype);
    if (!size) return error(path, ": tensor ", t->name, " has an invalid shape ", t->shape.str());
    if (*size > 0 && t->data == nullptr) return error(path, ": tensor ", t->name, " has no data");
    if (header.size() > 1) header += ",";
    header += json_quote(t->name) + ":{\"dtype\":\"" + safetensors_dtype_name(t->dtype) +
              "\",\"shape\":[";
    for (int i = 0; i < t->shape.rank(); ++i) {
      if (i) header += ",";
      header += std::to_string(t->shape[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + *size) + "]}";
    offset += *size;
    pieces.emplace_back(static_cast<const char*>(t->data), *size);
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');

  char length[8];
  put_u64(header.size(), length);
  pieces.insert(pieces.begin(), {std::string_view(length, 8), std::string_view(header)});
  return write_file_atomically(path, pieces);
}

Status write_safetensors(const std::string& path, const SafetensorsFile& file) {
  std::vector<TensorView> views;
  views.reserve(file.tensors.size());
  for (const TensorEntry& t : file.tensors) {
    const std::optional<uint64_t> size = tensor_byte_size(t.shape, t.dtype);
    if (!size || *size != t.bytes.size()) {
      return error(path, ": tensor ", t.name, " holds ", t.bytes.size(), " bytes but ",
                   dtype_name(t.dtype), t.shape.str(), " needs ", size ? *size : 0);
    }
    views.push_back(TensorView{t.name, t.dtype, t.shape, t.bytes.data()});
  }
  return write_safetensors(path, file.metadata, views);
}

namespace {

struct PendingTensor {
  TensorEntry entry;
  uint64_t begin = 0, end = 0;
};

Status parse_tensor_info(const std::string& name, const JsonValue& info, PendingTensor* out) {
  if (info.kind != JsonValue::Kind::object)
    return data_loss("tensor ", name, ": entry is not an object");
  const JsonValue* dtype = info.find("dtype");
  const JsonValue* shape = info.find("shape");
  const JsonValue* offsets = info.find("data_offsets");
  if (!dtype || dtype->kind != JsonValue::Kind::string) {
    return data_loss("tensor ", name, ": missing \"dtype\"");
  }
  const std::optional<DType> parsed = parse_dtype(dtype->text);
  if (!parsed) {
    return error("tensor ", name, ": unsupported dtype ", dtype->text,
                 " (F32, BF16, I32, I64, U8, I8 are)");
  }
  if (!shape || shape->kind != JsonValue::Kind::array) {
    return data_loss("tensor ", name, ": missing \"shape\"");
  }
  std::vector<int64_t> dims;
  for (const JsonValue& d : shape->items) {
    const std::optional<int64_t> v = d.as_int64();
    if (!v || *v < 0) return data_loss("tensor ", name, ": bad dimension in shape");
    dims.push_back(*v);
  }
  if (!offsets || offsets->kind != JsonValue::Kind::array || offsets->items.size() != 2) {
    return data_loss("tensor ", name, ": \"data_offsets\" must be [begin, end]");
  }
  const std::optional<int64_t> begin = offsets->items[0].as_int64();
  const std::optional<int64_t> end = offsets->items[1].as_int64();
  if (!begin || !end || *begin < 0 || *end < *begin) {
    return data_loss("tensor ", name, ": bad data_offsets");
  }
  out->entry.name = name;
  out->entry.dtype = *parsed;
  out->entry.shape = Shape(std::move(dims));
  out->begin = static_cast<uint64_t>(*begin);
  out->end = static_cast<uint64_t>(*end);
  const std::optional<uint64_t> size = tensor_byte_size(out->entry.shape, out->entry.dtype);
  if (!size || *size != out->end - out->begin) {
    return data_loss("tensor ", name, ": data_offsets [", out->begin, ",", out->end, ") hold ",
                     out->end - out->begin, " bytes but ", safetensors_dtype_name(out->entry.dtype),
                     out->entry.shape.str(), " needs ", size ? *size : 0);
  }
  return Status();
}

Result<SafetensorsFile> read_safetensors_unlabelled(const std::string& path) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  IC_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file_bytes, fs->open_read(path));
  const uint64_t file_size = file_bytes->size();
  if (file_size < 8)
    return data_loss("file is ", file_size, " bytes, shorter than the 8-byte header size");
  unsigned char length_bytes[8];
  IC_RETURN_IF_ERROR(file_bytes->read(0, 8, reinterpret_cast<char*>(length_bytes)));
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length_bytes[i];
  if (header_size > kMaxHeaderBytes)
    return data_loss("header size ", header_size, " exceeds 100 MiB");
  if (header_size > file_size - 8) {
    return data_loss("header size ", header_size, " runs past the end of the ", file_size,
                     "-byte file");
  }
  std::string header(header_size, '\0');
  IC_RETURN_IF_ERROR(file_bytes->read(8, header.size(), header.data()));
  if (header.empty() || header[0] != '{') return data_loss("header does not start with '{'");
  Result<JsonValue> json = parse_json(header);
  if (!json.ok()) return json.status().with_context("header");
  if (json->kind != JsonValue::Kind::object) return data_loss("header is not a JSON object");

  SafetensorsFile file;
  std::vector<PendingTensor> pending;
  std::set<std::string> names;
  for (const auto& [name, value] : json->members) {
    if (!names.insert(name).second) return data_loss("header names ", name, " twice");
    if (name == "__metadata__") {
      if (value.kind != JsonValue::Kind::object) return data_loss("__metadata__ is not an object");
      for (const auto& [key, item] : value.members) {
        if (item.kind != JsonValue::Kind::string) {
          return data_loss("__metadata__ value of ", key, " is not a string");
        }
        file.metadata[key] = item.text;
      }
      continue;
    }
    PendingTensor t;
    IC_RETURN_IF_ERROR(parse_tensor_info(name, value, &t));
    pending.push_back(std::move(t));
  }

  // The byte ranges must tile the data section: no gaps, no overlaps, nothing left over.
  std::sort(pending.begin(), pending.end(), [](const PendingTensor& a, const PendingTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t data_start = 8 + header_size;
  const uint64_t data_size = file_size - data_start;
  uint64_t expected = 0;
  for (const PendingTensor& t : pending) {
    if (t.begin != expected) {
      return data_loss("tensor ", t.entry.name, ": data_offsets begin at ", t.begin, ", expected ",
                       expected, " (ranges must be contiguous)");
    }
    if (t.end > data_size) {
      return data_loss("tensor ", t.entry.name, ": data_offsets end at ", t.end,
                       " but the data section has ", data_size, " bytes (file truncated?)");
    }
    expected = t.end;
  }
  if (expected != data_size) {
    return data_loss("data section has ", data_size, " bytes but the tensors cover ", expected);
  }
  file.tensors.reserve(pending.size());
  // In offset order, through one buffer: a few large reads rather than one per tensor (one
  // request per 8 MiB from a bucket).
  BufferedReader reader(std::move(file_bytes), fs->read_buffer_bytes(), fs->wants_read_ahead());
  reader.seek(data_start);
  for (PendingTensor& t : pending) {
    t.entry.bytes.resize(t.end - t.begin);
    IC_ASSIGN_OR_RETURN(const size_t got, reader.read(t.entry.bytes.data(), t.entry.bytes.size()));
    if (got != t.entry.bytes.size()) return data_loss("file shrank while reading");
    file.tensors.push_back(std::move(t.entry));
  }
  return file;
}

}  // namespace

Result<SafetensorsFile> read_safetensors(const std::string& path) {
  Result<SafetensorsFile> file = read_safetensors_unlabelled(path);
  if (!file.ok()) return file.status().with_context("safetensors file " + path);
  return file;
}

}  // namespace ic
