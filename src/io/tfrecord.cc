// TFRecord framing: TensorFlow's record_writer.cc / record_reader.cc, byte for byte.
#include "io/tfrecord.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ic {
namespace {

constexpr size_t kHeaderBytes = 12;  // uint64 length + uint32 masked crc of the length
constexpr size_t kFooterBytes = 4;   // uint32 masked crc of the data
constexpr size_t kStdioBufferBytes = size_t{1} << 20;

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
  reader.file_.reset(std::fopen(path.c_str(), "rb"));
  if (!reader.file_) return error(path, ": cannot open for reading: ", std::strerror(errno));
  struct stat st {};
  if (fstat(fileno(reader.file_.get()), &st) != 0) {
    return error(path, ": cannot stat: ", std::strerror(errno));
  }
  reader.file_size_ = static_cast<uint64_t>(st.st_size);
  // Not zero-filled: stdio writes before it reads, and clearing 1 MiB per file opened
  // dominated reading small files (event files, the fuzzer's inputs).
  reader.buffer_ = std::make_unique_for_overwrite<char[]>(kStdioBufferBytes);
  std::setvbuf(reader.file_.get(), reader.buffer_.get(), _IOFBF, kStdioBufferBytes);
  return reader;
}

Status TfRecordReader::corrupt(uint64_t at, const std::string& what) const {
  return error(path_, ": corrupt record at byte ", at, ": ", what);
}

Result<bool> TfRecordReader::read(std::string* record) {
  can_skip_ = false;
  const uint64_t start = offset_;
  char header[kHeaderBytes];
  const size_t got = std::fread(header, 1, kHeaderBytes, file_.get());
  if (got == 0 && std::feof(file_.get())) return false;  // clean end of file
  if (std::ferror(file_.get())) return error(path_, ": read error at byte ", start);
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
  if (std::fread(record->data(), 1, length, file_.get()) != length ||
      std::fread(footer, 1, kFooterBytes, file_.get()) != kFooterBytes) {
    if (std::ferror(file_.get())) return error(path_, ": read error at byte ", start);
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
  if (std::fseek(file_.get(), static_cast<long>(resume_offset_), SEEK_SET) != 0) return false;
  offset_ = resume_offset_;
  return true;
}

Status TfRecordReader::seek(uint64_t offset) {
  if (offset > file_size_) {
    return error(path_, ": byte offset ", offset, " is past the end of the file (", file_size_,
                 " bytes)");
  }
  can_skip_ = false;
  if (std::fseek(file_.get(), static_cast<long>(offset), SEEK_SET) != 0) {
    return error(path_, ": cannot seek to byte ", offset, ": ", std::strerror(errno));
  }
  offset_ = offset;
  return Status();
}

// ---- writer --------------------------------------------------------------------------------

Result<TfRecordWriter> TfRecordWriter::create(const std::string& path) {
  TfRecordWriter writer;
  writer.path_ = path;
  writer.file_.reset(std::fopen(path.c_str(), "wb"));
  if (!writer.file_) return error(path, ": cannot open for writing: ", std::strerror(errno));
  writer.buffer_ = std::make_unique<char[]>(kStdioBufferBytes);
  std::setvbuf(writer.file_.get(), writer.buffer_.get(), _IOFBF, kStdioBufferBytes);
  return writer;
}

Status TfRecordWriter::write(std::string_view record) {
  if (!file_) return error(path_, ": write after close");
  char header[kHeaderBytes];
  make_header(record.size(), header);
  char footer[kFooterBytes];
  put_u32(footer, mask_crc32c(crc32c(record.data(), record.size())));
  std::FILE* f = file_.get();
  if (std::fwrite(header, 1, kHeaderBytes, f) != kHeaderBytes ||
      std::fwrite(record.data(), 1, record.size(), f) != record.size() ||
      std::fwrite(footer, 1, kFooterBytes, f) != kFooterBytes) {
    return error(path_, ": write failed at byte ", bytes_written_, ": ", std::strerror(errno));
  }
  bytes_written_ += kHeaderBytes + record.size() + kFooterBytes;
  return Status();
}

Status TfRecordWriter::close() {
  if (!file_) return Status();
  std::FILE* f = file_.release();
  bool ok = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int saved_errno = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return error(path_, ": cannot flush and close: ", std::strerror(saved_errno));
  return Status();
}

}  // namespace ic
