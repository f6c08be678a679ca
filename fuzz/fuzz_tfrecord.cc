// TFRecord framing (io/tfrecord.h): the input is a whole TFRecord file. Reads every record,
// skipping corrupt ones as the input pipeline does, and checks the reader's promises.
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "io/tfrecord.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      ic::fuzz::write_scratch_file("records.tfrecord", ic::fuzz::as_view(data, size));
  ic::Result<ic::TfRecordReader> reader = ic::TfRecordReader::open(path);
  if (!reader.ok()) return 0;
  std::string record;
  // Every record takes at least 16 bytes, so a reader that loops longer is stuck.
  for (size_t reads = 0; reads <= size / 16 + 1; ++reads) {
    const uint64_t before = reader->offset();
    ic::Result<bool> more = reader->read(&record);
    if (more.ok()) {
      if (!*more) return 0;
      // A record read whole lies inside the file.
      if (reader->offset() > size || reader->offset() != before + 16 + record.size()) std::abort();
      continue;
    }
    if (!reader->skip_corrupt()) return 0;
    if (reader->offset() <= before || reader->offset() > size) std::abort();  // must move on
  }
  std::abort();  // more reads than the file can hold records
}
