// The ordered stream of serialized records that feeds the input pipeline, before any decoding:
// files (shuffled per epoch and repeated when training), read interleaved, then (training) a
// shuffle buffer -- tf.data's list_files -> repeat -> parallel_interleave -> shuffle, made
// deterministic for a given seed.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/input_position.h"
#include "data/random.h"
#include "io/tfrecord.h"

namespace ic {

struct RecordStreamOptions {
  bool repeat_and_shuffle_files = false;  // training: new file order each epoch, forever
  // Files open at once, one record from each in turn; never more than there are files. The
  // reference's repeat-then-interleave opens copies of a file side by side when there are fewer
  // files than this, so each record comes out cycle_length times in a row, and a shuffle buffer
  // bounded by the records the files hold would mix only a short stretch of them at a time.
  int cycle_length = 8;
  int shuffle_buffer = 0;  // records; 0 or 1 = keep the interleaved order
  bool skip_corrupt_records = true;
  uint64_t seed = 0;
};

class RecordStream {
 public:
  RecordStream(std::vector<std::string> files, const RecordStreamOptions& options);

  // The next record, the file it came from and (when `offset` is not null) the byte offset
  // where it starts there. Returns false at the end (never when repeating). A corrupt record
  // (a data_loss error) is returned as the error when skip_corrupt_records is false; otherwise
  // reading goes on at the next valid record of that file (TfRecordReader::resync), and the
  // records lost are counted (one when only a record's data was damaged, else the bytes skipped
  // over the mean record size read so far, at least one) and the damage described in
  // damage_notes(); a file that cannot be opened or read is always an error. When
  // repeating, an error too once every file has been read through without giving one good record
  // (all empty, not TFRecords, or corrupt in every record): the stream would otherwise go round
  // them forever.
  Result<bool> next(std::string* record, std::string* source, uint64_t* offset = nullptr);

  // Where the stream stands now (file indices into the constructor's list), and the way back
  // there: restore() on a new stream of the same files and options re-opens the files at their
  // offsets and re-reads the buffered records, so that next() continues exactly as the stream
  // that gave the position would have. An error names the file and offset that do not fit.
  RecordStreamPosition position() const;
  Status restore(const RecordStreamPosition& position);

  // Records lost to damaged framing or CRCs (estimated where the framing was lost).
  int64_t corrupt_records() const { return corrupt_records_; }
  uint64_t bytes_skipped() const { return bytes_skipped_; }
  int64_t damage_count() const { return damage_count_; }
  // The first damaged records: "<file>: corrupt record at byte N: <why>; skipped B bytes to the
  // next valid record at byte M (about K records)".
  const std::vector<std::string>& damage_notes() const { return damage_notes_; }
  int64_t file_passes_started() const { return epoch_; }

 private:
  struct Slot {
    TfRecordReader reader;
    size_t file = 0;           // index in files_ (its path is files_[file])
    int64_t good_records = 0;  // given out from this opening of the file
  };
  struct Buffered {
    std::string record;
    uint64_t offset = 0;
    size_t file = 0;  // index in files_ (its path is files_[file])
  };

  // The next file to open (its index), or nullopt when the list is exhausted (no repeat).
  std::optional<size_t> next_file();
  // The file order of an epoch (0-based): a permutation drawn from the seed.
  void draw_order(int64_t epoch);
  // How many files the cycle holds open: cycle_length, or the number of files when fewer.
  size_t open_files_at_most() const;
  // The next record of the open files in turn, with its byte offset and file index.
  Result<bool> next_interleaved(std::string* record, uint64_t* offset, size_t* file);
  // A file was read to its end: records it when it gave no good record; the error once every
  // file has (repeating only).
  Status note_file_done(const Slot& slot);
  // Counts and describes a damaged record that `resynced` went past.
  void note_damage(const std::string& what, const TfRecordResync& resynced);

  std::vector<std::string> files_;
  RecordStreamOptions options_;
  std::vector<size_t> order_;
  size_t order_pos_ = 0;
  int64_t epoch_ = 0;
  std::vector<Slot> slots_;
  size_t slot_pos_ = 0;
  bool input_done_ = false;
  std::vector<Buffered> buffer_;
  Rng shuffle_rng_;
  int64_t corrupt_records_ = 0;
  uint64_t bytes_skipped_ = 0;
  int64_t damage_count_ = 0;
  std::vector<std::string> damage_notes_;
  // Good records given out and their framed bytes: the mean record size lost bytes are
  // counted by.
  int64_t good_records_read_ = 0;
  uint64_t good_bytes_read_ = 0;
  // Files read through without a good record since the stream last gave one, and why the last
  // of them failed (for the message when that is all of them).
  std::set<std::string> barren_files_;
  std::string last_corruption_;
};

}  // namespace ic
