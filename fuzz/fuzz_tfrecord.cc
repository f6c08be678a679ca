// TFRecord framing (io/tfrecord.h): the input is a whole TFRecord file. Reads every record twice,
// once skipping corrupt ones by their length (skip_corrupt) and once as the input pipeline does
// (resync to the next valid record), counts the records by their framing, and checks the
// reader's promises.
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "io/tfrecord.h"

namespace {

// Reads to the end, going past damage with skip_corrupt() while the damaged length is readable.
void read_skipping(ic::TfRecordReader& reader, size_t size) {
  std::string record;
  // Every record takes at least 16 bytes, so a reader that loops longer is stuck.
  for (size_t reads = 0; reads <= size / 16 + 1; ++reads) {
    const uint64_t before = reader.offset();
    ic::Result<bool> more = reader.read(&record);
    if (more.ok()) {
      if (!*more) return;
      // A record read whole lies inside the file.
      if (reader.offset() > size || reader.offset() != before + 16 + record.size()) std::abort();
      continue;
    }
    if (!reader.skip_corrupt()) return;
    if (reader.offset() <= before || reader.offset() > size) std::abort();  // must move on
  }
  std::abort();  // more reads than the file can hold records
}

// Reads to the end, going past damage with resync().
void read_resyncing(ic::TfRecordReader& reader, size_t size) {
  std::string record;
  // A good record takes at least 16 bytes and a resync moves at least one byte on.
  for (size_t reads = 0; reads <= size + 2; ++reads) {
    const uint64_t before = reader.offset();
    ic::Result<bool> more = reader.read(&record);
    if (more.ok()) {
      if (!*more) return;
      continue;
    }
    ic::Result<ic::TfRecordResync> resynced = reader.resync();
    if (!resynced.ok()) return;
    const ic::TfRecordResync& r = *resynced;
    if (r.from != before || r.to <= r.from || r.to > size || reader.offset() != r.to) std::abort();
    if (r.found != (r.to < size)) std::abort();
    if (!r.found) return;
    // resync() verified a whole record there: it must read.
    const uint64_t at = reader.offset();
    ic::Result<bool> next = reader.read(&record);
    if (!next.ok() || !*next || reader.offset() != at + 16 + record.size()) std::abort();
  }
  std::abort();  // more steps than the file has bytes
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      ic::fuzz::write_scratch_file("records.tfrecord", ic::fuzz::as_view(data, size));
  ic::Result<ic::TfRecordReader> skipping = ic::TfRecordReader::open(path);
  if (!skipping.ok()) return 0;
  read_skipping(*skipping, size);
  ic::Result<ic::TfRecordReader> resyncing = ic::TfRecordReader::open(path);
  if (!resyncing.ok()) return 0;
  read_resyncing(*resyncing, size);
  ic::Result<ic::TfRecordCount> count = ic::count_tfrecords(path);
  if (!count.ok()) return 0;
  // Every record read whole has a header that verifies, and a header takes 16 bytes or more.
  if (count->records < 0 || static_cast<uint64_t>(count->records) * 16 > size) std::abort();
  if (count->counted_bytes + count->uncounted_bytes > size) std::abort();
  return 0;
}
