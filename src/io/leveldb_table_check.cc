#include "io/leveldb_table_check.h"

#include <cstdint>

namespace ic {
namespace {

constexpr size_t kFooterSize = 48;       // two handles padded to 40 bytes, 8-byte magic
constexpr size_t kBlockTrailerSize = 5;  // compression type byte + CRC-32C

// Reads a varint (LEB128, at most `max_bytes` bytes) at *pos; false when malformed or cut off.
bool read_varint(std::string_view bytes, size_t* pos, int max_bytes, uint64_t* value) {
  *value = 0;
  for (int i = 0; i < max_bytes && *pos < bytes.size(); ++i) {
    const auto byte = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

struct BlockHandle {
  uint64_t offset = 0, size = 0;
};

bool read_handle(std::string_view bytes, size_t* pos, BlockHandle* handle) {
  return read_varint(bytes, pos, 10, &handle->offset) && read_varint(bytes, pos, 10, &handle->size);
}

// The block and its trailer inside the part of the table before the footer.
bool inside(const BlockHandle& h, size_t blocks_end) {
  return h.offset <= blocks_end && h.size <= blocks_end - h.offset &&
         kBlockTrailerSize <= blocks_end - h.offset - h.size;
}

uint32_t fixed32(std::string_view bytes, size_t pos) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[pos + i]);
  return v;
}

}  // namespace

Status check_table_block_handles(std::string_view table, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return data_loss(path, ": not a valid LevelDB table (", what, ")");
  };
  if (table.size() < kFooterSize) return bad("shorter than its 48-byte footer");
  const size_t blocks_end = table.size() - kFooterSize;
  const std::string_view footer = table.substr(blocks_end);
  size_t pos = 0;
  BlockHandle metaindex, index;
  if (!read_handle(footer, &pos, &metaindex) || !read_handle(footer, &pos, &index))
    return bad("malformed footer");
  if (!inside(metaindex, blocks_end) || !inside(index, blocks_end))
    return bad("the footer points outside the file");

  // The index block: entries (shared, non-shared, value length, key delta, value) whose values
  // are the data blocks' handles, then the restart array and its length.
  const std::string_view block = table.substr(index.offset, index.size);
  if (block.size() < 4) return bad("index block too short");
  const uint64_t restarts = fixed32(block, block.size() - 4);
  if (restarts > (block.size() - 4) / 4) return bad("index block restart array too long");
  const std::string_view entries = block.substr(0, block.size() - 4 - 4 * restarts);
  for (pos = 0; pos < entries.size();) {
    uint64_t shared = 0, non_shared = 0, value_size = 0;
    if (!read_varint(entries, &pos, 5, &shared) || !read_varint(entries, &pos, 5, &non_shared) ||
        !read_varint(entries, &pos, 5, &value_size) || non_shared > entries.size() - pos ||
        value_size > entries.size() - pos - non_shared) {
      return bad("malformed index block entry");
    }
    pos += non_shared;
    const std::string_view value = entries.substr(pos, value_size);
    pos += value_size;
    size_t value_pos = 0;
    BlockHandle data;
    if (!read_handle(value, &value_pos, &data)) return bad("malformed data block handle");
    if (!inside(data, blocks_end)) return bad("a data block handle points outside the file");
  }
  return Status();
}

}  // namespace ic
