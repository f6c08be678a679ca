#include "data/record_stream.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace ic {
namespace {
constexpr uint64_t kFileOrderStream = 0x66696C65;  // "file"
constexpr uint64_t kShuffleStream = 0x73687566;    // "shuf"
constexpr size_t kMaxDamageNotes = 20;
constexpr uint64_t kFramingBytes = 16;  // a record's header and footer
}  // namespace

RecordStream::RecordStream(std::vector<std::string> files, const RecordStreamOptions& options)
    : files_(std::move(files)),
      options_(options),
      shuffle_rng_(mix64(options.seed ^ kShuffleStream)) {
  order_.resize(files_.size());
  std::iota(order_.begin(), order_.end(), size_t{0});
  if (options_.repeat_and_shuffle_files) order_pos_ = order_.size();  // shuffle before first use
  if (options_.cycle_length < 1) options_.cycle_length = 1;
}

void RecordStream::draw_order(int64_t epoch) {
  // Fisher-Yates with the epoch's own generator.
  std::iota(order_.begin(), order_.end(), size_t{0});
  Rng rng(mix64(options_.seed ^ kFileOrderStream), static_cast<uint64_t>(epoch));
  for (size_t i = order_.size(); i > 1; --i) {
    std::swap(order_[i - 1], order_[rng.uniform_int(static_cast<uint32_t>(i))]);
  }
}

std::optional<size_t> RecordStream::next_file() {
  if (order_.empty()) return std::nullopt;
  if (order_pos_ == order_.size()) {
    if (!options_.repeat_and_shuffle_files) return std::nullopt;
    draw_order(epoch_++);  // a new epoch: a new order of the files
    order_pos_ = 0;
  }
  return order_[order_pos_++];
}

Status RecordStream::note_file_done(const Slot& slot) {
  if (!options_.repeat_and_shuffle_files || slot.good_records > 0) return Status();
  const std::string& path = files_[slot.file];
  barren_files_.insert(path);
  if (barren_files_.size() < files_.size()) return Status();
  return error("none of the ", files_.size(),
               " input files holds a readable record (each is empty, not a TFRecord file, or "
               "corrupt in every record), e.g. ",
               last_corruption_.empty() ? path + ": no records" : last_corruption_);
}

void RecordStream::note_damage(const std::string& what, const TfRecordResync& resynced) {
  const uint64_t skipped = resynced.skipped_bytes();
  int64_t lost = 1;
  if (!resynced.one_record && good_records_read_ > 0) {
    const double mean = static_cast<double>(good_bytes_read_) / good_records_read_;
    lost = std::max<int64_t>(1, std::llround(static_cast<double>(skipped) / mean));
  }
  corrupt_records_ += lost;
  bytes_skipped_ += skipped;
  ++damage_count_;
  if (damage_notes_.size() >= kMaxDamageNotes) return;
  std::string note = what + "; skipped " + std::to_string(skipped) + " bytes ";
  note += resynced.found ? "to the next valid record at byte " + std::to_string(resynced.to)
                         : std::string("to the end of the file");
  note += " (" + std::string(resynced.one_record ? "" : "about ") + std::to_string(lost) +
          (lost == 1 ? " record)" : " records)");
  damage_notes_.push_back(std::move(note));
}

size_t RecordStream::open_files_at_most() const {
  return std::min(static_cast<size_t>(options_.cycle_length), files_.size());
}

Result<bool> RecordStream::next_interleaved(std::string* record, uint64_t* offset, size_t* file) {
  while (true) {
    // Keep cycle_length files open while there are files left (never more than there are).
    while (slots_.size() < open_files_at_most()) {
      std::optional<size_t> next = next_file();
      if (!next) break;
      IC_ASSIGN_OR_RETURN(TfRecordReader reader, TfRecordReader::open(files_[*next]));
      slots_.push_back(Slot{std::move(reader), *next});
    }
    if (slots_.empty()) return false;
    if (slot_pos_ >= slots_.size()) slot_pos_ = 0;
    Slot& slot = slots_[slot_pos_];
    const uint64_t record_offset = slot.reader.offset();
    Result<bool> got = slot.reader.read(record);
    if (!got.ok()) {
      // Only damaged bytes are skipped; a failure to read (a bucket that stays unreachable) is
      // not the data's and stops the stream.
      const bool corrupt = got.status().code() == StatusCode::data_loss;
      if (!options_.skip_corrupt_records || !corrupt) return got.status();
      last_corruption_ = got.status().message();
      IC_ASSIGN_OR_RETURN(const TfRecordResync resynced, slot.reader.resync());
      note_damage(got.status().message(), resynced);
      if (resynced.found) continue;  // same file, the next valid record
      got = false;                   // nothing valid follows in this file
    }
    if (!*got) {
      // End of this file: the next file takes its place in the cycle (opened above).
      IC_RETURN_IF_ERROR(note_file_done(slot));
      slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(slot_pos_));
      // A position restored from a stream that held more openings than files shrinks to the
      // bound here, one file end at a time.
      if (slots_.size() >= open_files_at_most()) continue;
      if (std::optional<size_t> next = next_file()) {
        IC_ASSIGN_OR_RETURN(TfRecordReader reader, TfRecordReader::open(files_[*next]));
        slots_.insert(slots_.begin() + static_cast<std::ptrdiff_t>(slot_pos_),
                      Slot{std::move(reader), *next});
      }
      continue;
    }
    *offset = record_offset;
    *file = slot.file;
    ++slot.good_records;
    ++good_records_read_;
    good_bytes_read_ += record->size() + kFramingBytes;
    barren_files_.clear();
    slot_pos_ = (slot_pos_ + 1) % slots_.size();
    return true;
  }
}

Result<bool> RecordStream::next(std::string* record, std::string* source, uint64_t* offset) {
  if (options_.shuffle_buffer <= 1) {
    uint64_t record_offset = 0;
    size_t file = 0;
    IC_ASSIGN_OR_RETURN(const bool got, next_interleaved(record, &record_offset, &file));
    if (!got) return false;
    *source = files_[file];
    if (offset != nullptr) *offset = record_offset;
    return true;
  }
  // tf.data's shuffle: fill the buffer, then hand out a uniformly chosen element and put the
  // next input record in its place.
  const size_t capacity = static_cast<size_t>(options_.shuffle_buffer);
  while (!input_done_ && buffer_.size() < capacity) {
    Buffered item;
    IC_ASSIGN_OR_RETURN(const bool got, next_interleaved(&item.record, &item.offset, &item.file));
    if (!got) {
      input_done_ = true;
      break;
    }
    buffer_.push_back(std::move(item));
  }
  if (buffer_.empty()) return false;
  const size_t pick = shuffle_rng_.uniform_int(static_cast<uint32_t>(buffer_.size()));
  *record = std::move(buffer_[pick].record);
  *source = files_[buffer_[pick].file];
  if (offset != nullptr) *offset = buffer_[pick].offset;
  if (pick != buffer_.size() - 1) buffer_[pick] = std::move(buffer_.back());
  buffer_.pop_back();
  return true;
}

RecordStreamPosition RecordStream::position() const {
  RecordStreamPosition p;
  p.epoch = epoch_;
  p.order_pos = order_pos_;
  p.input_done = input_done_;
  for (const Slot& slot : slots_) {
    p.open_files.push_back({slot.file, slot.reader.offset(), slot.good_records});
  }
  p.slot_pos = slot_pos_;
  for (const Buffered& item : buffer_) p.buffer.push_back({item.file, item.offset});
  p.shuffle_rng = shuffle_rng_.state();
  return p;
}

Status RecordStream::restore(const RecordStreamPosition& p) {
  for (const auto& f : p.open_files) {
    if (f.file >= files_.size())
      return error("input position names file ", f.file, " of ", files_.size());
  }
  for (const auto& b : p.buffer) {
    if (b.file >= files_.size())
      return error("input position names file ", b.file, " of ", files_.size());
  }
  if (p.order_pos > files_.size() || p.slot_pos > p.open_files.size()) {
    return error("input position is past the end of its file list");
  }
  if (p.input_done && options_.repeat_and_shuffle_files) {
    return error("input position says a repeating stream has ended");
  }
  if (static_cast<int>(p.open_files.size()) > options_.cycle_length ||
      (options_.shuffle_buffer > 1 &&
       p.buffer.size() > static_cast<size_t>(options_.shuffle_buffer)) ||
      (options_.shuffle_buffer <= 1 && !p.buffer.empty())) {
    return error("input position has more open files or buffered records than this stream holds");
  }
  epoch_ = p.epoch;
  if (options_.repeat_and_shuffle_files && epoch_ > 0) draw_order(epoch_ - 1);
  order_pos_ = p.order_pos;
  input_done_ = p.input_done;
  slots_.clear();
  for (const auto& f : p.open_files) {
    IC_ASSIGN_OR_RETURN(TfRecordReader reader, TfRecordReader::open(files_[f.file]));
    IC_RETURN_IF_ERROR(reader.seek(f.offset));
    slots_.push_back(Slot{std::move(reader), f.file, f.good_records});
  }
  slot_pos_ = p.slot_pos;
  // The buffered records, read again from where they were read the first time; a record that
  // no longer reads there means the file changed since the position was taken.
  buffer_.clear();
  buffer_.reserve(p.buffer.size());
  std::vector<std::optional<TfRecordReader>> readers(files_.size());
  for (const auto& b : p.buffer) {
    std::optional<TfRecordReader>& reader = readers[b.file];
    if (!reader) {
      IC_ASSIGN_OR_RETURN(TfRecordReader opened, TfRecordReader::open(files_[b.file]));
      reader.emplace(std::move(opened));
    }
    IC_RETURN_IF_ERROR(reader->seek(b.offset));
    Buffered item;
    Result<bool> got = reader->read(&item.record);
    if (!got.ok()) {
      return error("input position: the buffered record no longer reads: ", got.status().message());
    }
    if (!*got) {
      return error(files_[b.file], ": input position names a record at byte ", b.offset,
                   ", the end of the file");
    }
    item.offset = b.offset;
    item.file = b.file;
    buffer_.push_back(std::move(item));
  }
  shuffle_rng_.set_state(p.shuffle_rng);
  return Status();
}

}  // namespace ic
