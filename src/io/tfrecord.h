// TFRecord files, byte-compatible with TensorFlow. Each record is
//   uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)
// little-endian, where masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "io/file_system.h"

namespace ic {

// CRC-32C (Castagnoli), as TensorFlow's crc32c::Value.
uint32_t crc32c(const void* data, size_t size);
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
uint32_t mask_crc32c(uint32_t crc);
uint32_t unmask_crc32c(uint32_t masked);
// The table-driven version crc32c() uses when the CPU lacks SSE4.2 (tests compare the two).
uint32_t crc32c_portable(const void* data, size_t size);

// Reads records one after another. A bad length CRC, a bad data CRC or a truncated record is
// an error that names the file and the byte offset where the record starts.
class TfRecordReader {
 public:
  static Result<TfRecordReader> open(const std::string& path);

  // Reads the next record into *record. Returns false at a clean end of file.
  Result<bool> read(std::string* record);
  // After a corrupt record: moves past it when the length was readable, so a caller told to
  // skip corrupt records can go on; returns false when the rest of the file is unreadable.
  bool skip_corrupt();
  uint64_t offset() const { return offset_; }  // where the next record starts
  // Continues reading at byte `offset` (a record start given out by offset() earlier, e.g. a
  // saved input position). An error naming the file when the offset is past its end.
  Status seek(uint64_t offset);
  const std::string& path() const { return path_; }

 private:
  Status corrupt(uint64_t at, const std::string& what) const;

  std::unique_ptr<BufferedReader> file_;
  std::string path_;
  uint64_t file_size_ = 0;
  uint64_t offset_ = 0;
  uint64_t resume_offset_ = 0;  // where skip_corrupt() continues
  bool can_skip_ = false;       // the last error left a readable length behind it
};

// Writes records (through the path's FileSystem). close() flushes and reports any write error;
// a writer destroyed without close() closes quietly (on an object store: writes nothing).
class TfRecordWriter {
 public:
  static Result<TfRecordWriter> create(const std::string& path);
  Status write(std::string_view record);
  // Flushes, fsyncs (so a rename after close() publishes complete data) and closes.
  Status close();
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  std::unique_ptr<WritableFile> file_;
  std::string path_;
  uint64_t bytes_written_ = 0;
};

// The 12-byte header and 4-byte footer TensorFlow frames `data` with, for tests and tools
// that build records by hand.
std::string frame_tfrecord(std::string_view data);

}  // namespace ic
