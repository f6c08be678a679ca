// TFRecord framing: TensorFlow's record_writer.cc / record_reader.cc, byte for byte.
#include "io/tfrecord.h"

#include <algorithm>
#include <cstring>

namespace ic {
namespace {

constexpr size_t kHeaderBytes = 12;  // uint64 length + uint32 masked crc of the length
constexpr size_t kFooterBytes = 4;   // uint32 masked crc of the data

void put_u32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}
void put_u64(char* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}
uint32_t get_u32(const char* in) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}
uint64_t get_u64(const char* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

void make_header(uint64_t length, char* header) {
  put_u64(header, length);
  put_u32(header + 8, mask_crc32c(crc32c(header, 8)));
}

}  // namespace

std::string frame_tfrecord(std::string_view data) {
  std::string out(kHeaderBytes + data.size() + kFooterBytes, '\0');
  make_header(data.size(), out.data());
  std::memcpy(out.data() + kHeaderBytes, data.data(), data.size());
  put_u32(out.data() + kHeaderBytes + data.size(), mask_crc32c(crc32c(data.data(), data.size())));
  return out;
}

// ---- reader --------------------------------------------------------------------------------

Result<TfRecordReader> TfRecordReader::open(const std::string& path) {
  TfRecordReader reader;
  reader.path_ = path;
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  IC_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->open_read(path));
  reader.file_size_ = file->size();
  reader.file_ = std::make_unique<BufferedReader>(std::move(file), fs->read_buffer_bytes(),
                                                  fs->wants_read_ahead());
  return reader;
}

Status TfRecordReader::corrupt(uint64_t at, const std::string& what) const {
  return data_loss(path_, ": corrupt record at byte ", at, ": ", what);
}

Result<bool> TfRecordReader::read(std::string* record) {
  can_skip_ = false;
  const uint64_t start = offset_;
  char header[kHeaderBytes];
  IC_ASSIGN_OR_RETURN(const size_t got, file_->read(header, kHeaderBytes));
  if (got == 0) return false;  // clean end of file
  if (got < kHeaderBytes) {
    return corrupt(start, "truncated header (" + std::to_string(got) + " of 12 bytes)");
  }
  const uint64_t length = get_u64(header);
  if (mask_crc32c(crc32c(header, 8)) != get_u32(header + 8)) {
    return corrupt(start, "length CRC mismatch");
  }
  // A length past the end of the file is a truncated record; checking it before allocating
  // also keeps a damaged-but-CRC-valid length from asking for terabytes.
  const uint64_t end = start + kHeaderBytes + length + kFooterBytes;
  if (length > file_size_ || end > file_size_) {
    return corrupt(start, "truncated record (length " + std::to_string(length) + ", file has " +
                              std::to_string(file_size_ - start) + " bytes from here)");
  }
  record->resize(length);
  char footer[kFooterBytes];
  IC_ASSIGN_OR_RETURN(const size_t data_got, file_->read(record->data(), length));
  IC_ASSIGN_OR_RETURN(const size_t footer_got, file_->read(footer, kFooterBytes));
  if (data_got != length || footer_got != kFooterBytes) {
    return corrupt(start, "truncated record (file shrank while reading)");
  }
  offset_ = end;
  if (mask_crc32c(crc32c(record->data(), length)) != get_u32(footer)) {
    resume_offset_ = end;
    can_skip_ = true;
    offset_ = start;  // offset() still names the bad record until skip_corrupt()
    return corrupt(start, "data CRC mismatch");
  }
  return true;
}

bool TfRecordReader::skip_corrupt() {
  if (!can_skip_) return false;
  can_skip_ = false;
  file_->seek(resume_offset_);
  offset_ = resume_offset_;
  return true;
}

Result<bool> TfRecordReader::valid_record_at(uint64_t at, const char* header,
                                             std::string* scratch) {
  const uint64_t length = get_u64(header);
  if (length > file_size_ || at + kHeaderBytes + length + kFooterBytes > file_size_) return false;
  scratch->resize(length + kFooterBytes);
  file_->seek(at + kHeaderBytes);
  IC_ASSIGN_OR_RETURN(const size_t got, file_->read(scratch->data(), scratch->size()));
  if (got != scratch->size()) return false;
  return mask_crc32c(crc32c(scratch->data(), length)) == get_u32(scratch->data() + length);
}

Result<TfRecordResync> TfRecordReader::resync() {
  const bool length_was_readable = can_skip_;
  can_skip_ = false;
  TfRecordResync result;
  result.from = offset_;
  // Candidate headers are tested a window at a time; consecutive windows overlap by a header
  // less one byte, so that every start is tested once.
  constexpr uint64_t kWindowStarts = 64 * 1024;
  std::string window;
  std::string scratch;
  uint64_t at = offset_ + 1;
  while (at + kHeaderBytes + kFooterBytes <= file_size_) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(kWindowStarts + kHeaderBytes - 1, file_size_ - at));
    window.resize(want);
    file_->seek(at);
    IC_ASSIGN_OR_RETURN(const size_t got, file_->read(window.data(), want));
    if (got < kHeaderBytes) break;
    const size_t starts = got - kHeaderBytes + 1;
    for (size_t i = 0; i < starts; ++i) {
      const char* header = window.data() + i;
      if (mask_crc32c(crc32c(header, 8)) != get_u32(header + 8)) continue;
      IC_ASSIGN_OR_RETURN(const bool valid, valid_record_at(at + i, header, &scratch));
      if (!valid) continue;
      result.to = at + i;
      result.found = true;
      break;
    }
    if (result.found) break;
    at += starts;
  }
  if (!result.found) result.to = file_size_;
  result.one_record = length_was_readable && result.to == resume_offset_;
  file_->seek(result.to);
  offset_ = result.to;
  return result;
}

Result<bool> TfRecordReader::skip_record() {
  const uint64_t start = offset_;
  char header[kHeaderBytes];
  IC_ASSIGN_OR_RETURN(const size_t got, file_->read(header, kHeaderBytes));
  if (got == 0) return false;
  if (got < kHeaderBytes) return corrupt(start, "truncated header");
  if (mask_crc32c(crc32c(header, 8)) != get_u32(header + 8)) {
    return corrupt(start, "length CRC mismatch");
  }
  const uint64_t length = get_u64(header);
  if (length > file_size_ || start + kHeaderBytes + length + kFooterBytes > file_size_) {
    return corrupt(start, "truncated record");
  }
  offset_ = start + kHeaderBytes + length + kFooterBytes;
  file_->seek(offset_);
  return true;
}

Result<TfRecordCount> count_tfrecords(const std::string& path, int64_t stop_after) {
  IC_ASSIGN_OR_RETURN(TfRecordReader reader, TfRecordReader::open(path));
  TfRecordCount count;
  while (stop_after <= 0 || count.records < stop_after) {
    const uint64_t start = reader.offset();
    Result<bool> more = reader.skip_record();
    if (more.ok()) {
      if (!*more) break;
      ++count.records;
      count.counted_bytes += reader.offset() - start;
      continue;
    }
    if (more.status().code() != StatusCode::data_loss) return more.status();
    IC_ASSIGN_OR_RETURN(const TfRecordResync resynced, reader.resync());
    ++count.damaged_regions;
    count.uncounted_bytes += resynced.skipped_bytes();
    if (!resynced.found) break;
  }
  return count;
}

Status TfRecordReader::seek(uint64_t offset) {
  if (offset > file_size_) {
    return error(path_, ": byte offset ", offset, " is past the end of the file (", file_size_,
                 " bytes)");
  }
  can_skip_ = false;
  file_->seek(offset);
  offset_ = offset;
  return Status();
}

// ---- writer --------------------------------------------------------------------------------

Result<TfRecordWriter> TfRecordWriter::create(const std::string& path) {
  TfRecordWriter writer;
  writer.path_ = path;
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(path));
  IC_ASSIGN_OR_RETURN(writer.file_, fs->open_write(path));
  return writer;
}

Status TfRecordWriter::write(std::string_view record) {
  if (!file_) return error(path_, ": write after close");
  char header[kHeaderBytes];
  make_header(record.size(), header);
  char footer[kFooterBytes];
  put_u32(footer, mask_crc32c(crc32c(record.data(), record.size())));
  Status written = file_->append(std::string_view(header, kHeaderBytes));
  if (written.ok()) written = file_->append(record);
  if (written.ok()) written = file_->append(std::string_view(footer, kFooterBytes));
  if (!written.ok()) return written.with_context("at byte " + std::to_string(bytes_written_));
  bytes_written_ += kHeaderBytes + record.size() + kFooterBytes;
  return Status();
}

Status TfRecordWriter::close() {
  if (!file_) return Status();
  const std::unique_ptr<WritableFile> file = std::move(file_);
  return file->close();
}

}  // namespace ic
