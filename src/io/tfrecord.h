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

// Where reading went on after a damaged record (TfRecordReader::resync).
struct TfRecordResync {
  uint64_t from = 0;   // the damaged record's start
  uint64_t to = 0;     // the next valid record's start, or the file's size when none follows
  bool found = false;  // a valid record starts at `to`
  // The damaged record's own length was readable (only its data CRC failed) and reading goes
  // on right after it: exactly one record was lost.
  bool one_record = false;
  uint64_t skipped_bytes() const { return to - from; }
};

// How many records a file's framing holds (count_tfrecords).
struct TfRecordCount {
  int64_t records = 0;           // headers whose length and length CRC verify
  uint64_t counted_bytes = 0;    // those records' bytes, framing included
  int64_t damaged_regions = 0;   // stretches whose framing could not be followed
  uint64_t uncounted_bytes = 0;  // their bytes: records there are not counted
};

// Counts the records of a TFRecord file by following its framing (headers only: a record whose
// data is damaged still counts as held). A header that does not verify starts a damaged region,
// which ends where resync() would read again; its records are not counted. Stops early once
// `stop_after` records are counted (0 = count all).
Result<TfRecordCount> count_tfrecords(const std::string& path, int64_t stop_after = 0);

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
  // After a corrupt record: goes on at the next valid record, the first byte after the damaged
  // record's start where a length, its CRC and the data's CRC all verify (or at the end of the
  // file). Whatever the damage (a flipped length, a cut record, a length claiming gigabytes),
  // the records after it are read. The result depends only on the file's bytes and the damaged
  // record's offset, so a position saved after it names the same records when read again.
  Result<TfRecordResync> resync();
  uint64_t offset() const { return offset_; }  // where the next record starts
  // Continues reading at byte `offset` (a record start given out by offset() earlier, e.g. a
  // saved input position). An error naming the file when the offset is past its end.
  Status seek(uint64_t offset);
  const std::string& path() const { return path_; }

 private:
  Status corrupt(uint64_t at, const std::string& what) const;
  // Whether a whole record with a valid length and data CRC starts at `at`.
  Result<bool> valid_record_at(uint64_t at, const char* header, std::string* scratch);
  // Moves past the next record by its header alone (count_tfrecords): false at the end of the
  // file, a data_loss error when the header does not verify or the record runs past the end.
  Result<bool> skip_record();
  friend Result<TfRecordCount> count_tfrecords(const std::string& path, int64_t stop_after);

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
