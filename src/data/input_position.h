// Where a training input stream stands, at a batch boundary as the consumer sees it, small
// enough to travel in a checkpoint's metadata: the record stream's file order, open files and
// their byte offsets, the shuffle buffer as references (file, byte offset) rather than record
// bytes, the shuffle generator's state, and the stream position that seeds each record's
// preprocessing. A pipeline created from a position hands out exactly the batches the original
// pipeline would have handed out next (data/input_pipeline.h), which is what makes a resumed
// training run bit-identical to one run straight through.
//
// Saved text, one item per line (all numbers decimal):
//   inception_cpp input position 1
//   seed <u64> cycle_length <n> shuffle_buffer <n> batch_size <n>
//   files <n>            then n lines: the file names (no folder), sorted, as the run lists them
//   stream_index <n>     records handed to preprocessing so far
//   epoch <n> order_pos <n> input_done <0|1>
//   rng <u64> <u64> <u64> <u64>
//   open <n> slot_pos <n>  then n lines: <file index> <byte offset> <good records so far>
//   buffer <n>             then n lines: <file index> <byte offset>
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/random.h"

namespace ic {

// data/record_stream.h's state. File indices point into the stream's (sorted) file list.
struct RecordStreamPosition {
  int64_t epoch = 0;       // file orders drawn so far (the order in use is epoch - 1's)
  uint64_t order_pos = 0;  // files of the current order opened so far
  bool input_done = false;
  struct OpenFile {
    uint64_t file = 0;
    uint64_t offset = 0;  // of its next record
    int64_t good_records = 0;
  };
  std::vector<OpenFile> open_files;  // the interleave cycle, in cycle order
  uint64_t slot_pos = 0;             // the open file read next
  struct BufferedRecord {
    uint64_t file = 0;
    uint64_t offset = 0;
  };
  std::vector<BufferedRecord> buffer;  // the shuffle buffer, in buffer order
  Rng::StateWords shuffle_rng{};
};

// The whole training input's state (data/input_pipeline.h). The first fields say which stream
// this is a position of: a pipeline refuses one of a different seed, interleave, shuffle buffer,
// batch size or file list.
struct InputPosition {
  uint64_t seed = 0;
  int cycle_length = 0;
  int shuffle_buffer = 0;
  int64_t batch_size = 0;
  std::vector<std::string> file_names;
  uint64_t stream_index = 0;
  RecordStreamPosition stream;
};

std::string format_input_position(const InputPosition& position);
// Checks the syntax and the internal consistency (file indices in range, counts within bounds);
// whether the files and offsets fit this run is checked by the pipeline that resumes from it.
// Errors begin with "<where>: input position: " (where = the checkpoint it came from).
Result<InputPosition> parse_input_position(const std::string& text, const std::string& where);

}  // namespace ic
