// TensorBoard event files (io/event_reader.h): the input is a whole events file.
#include <cstdlib>

#include "fuzz/fuzz_util.h"
#include "fuzz/quiet_protobuf.h"
#include "io/event_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      ic::fuzz::write_scratch_file("events.out.tfevents.0.fuzz", ic::fuzz::as_view(data, size));
  ic::Result<std::vector<tensorflow::Event>> events = ic::read_events(path);
  ic::Result<std::vector<ic::ScalarEvent>> scalars = ic::read_scalar_events(path);
  if (events.ok() != scalars.ok()) std::abort();                // the same file reads the same
  if (events.ok() && events->size() > size / 16) std::abort();  // a record is 16 bytes or more
  return 0;
}
