// A training input position read back from a checkpoint's metadata (data/input_position.h): the
// input is the text. A position that parses must format back to text that parses the same, and
// a record stream over two small TFRecord files must either refuse it (an error naming the file)
// or go on from it and give records.
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "data/input_position.h"
#include "data/record_stream.h"
#include "fuzz/fuzz_util.h"
#include "io/tfrecord.h"

namespace {

// Two files of three records each, written once.
constexpr int kRecordsInFiles = 6;
const std::vector<std::string>& stream_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> paths;
    for (const char* name : {"train-0", "train-1"}) {
      const std::string path = ic::fuzz::ScratchDir::path() + "/" + name;
      ic::Result<ic::TfRecordWriter> writer = ic::TfRecordWriter::create(path);
      if (!writer.ok()) std::abort();
      for (const char* record : {"a", "bb", "ccc"}) {
        if (!writer->write(record).ok()) std::abort();
      }
      if (!writer->close().ok()) std::abort();
      paths.push_back(path);
    }
    return paths;
  }();
  return files;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(ic::fuzz::as_view(data, size));
  ic::Result<ic::InputPosition> position = ic::parse_input_position(text, "fuzz");
  if (!position.ok()) return 0;
  const std::string formatted = ic::format_input_position(*position);
  ic::Result<ic::InputPosition> again = ic::parse_input_position(formatted, "fuzz");
  if (!again.ok() || ic::format_input_position(*again) != formatted) std::abort();

  if (position->file_names.size() != stream_files().size()) return 0;
  ic::RecordStreamOptions options;
  options.repeat_and_shuffle_files = true;
  options.cycle_length = position->cycle_length;
  // The input pipeline bounds the stream's buffer by the records the files hold (a larger one
  // would fill with the next epochs' copies, without end for a count like 10^9), and a position
  // claims only the flag's size: so the stream is given the pipeline's bound, not the claim.
  options.shuffle_buffer = std::min(position->shuffle_buffer, kRecordsInFiles);
  ic::RecordStream stream(stream_files(), options);
  if (!stream.restore(position->stream).ok()) return 0;
  std::string record, source;
  for (int i = 0; i < 8; ++i) {
    ic::Result<bool> got = stream.next(&record, &source);
    if (!got.ok()) return 0;
    if (!*got) std::abort();  // a repeating stream never ends
  }
  return 0;
}
