#include "io/event_reader.h"

#include "io/tfrecord.h"

namespace ic {

Result<std::vector<tensorflow::Event>> read_events(const std::string& path) {
  IC_ASSIGN_OR_RETURN(TfRecordReader reader, TfRecordReader::open(path));
  std::vector<tensorflow::Event> events;
  std::string record;
  while (true) {
    const uint64_t offset = reader.offset();
    IC_ASSIGN_OR_RETURN(const bool more, reader.read(&record));
    if (!more) break;
    tensorflow::Event event;
    if (!event.ParseFromString(record)) {
      return data_loss(path, ": record at byte ", offset, " is not a tensorflow.Event");
    }
    events.push_back(std::move(event));
  }
  return events;
}

Result<std::vector<ScalarEvent>> read_scalar_events(const std::string& path) {
  IC_ASSIGN_OR_RETURN(const std::vector<tensorflow::Event> events, read_events(path));
  std::vector<ScalarEvent> scalars;
  for (const tensorflow::Event& event : events) {
    if (!event.has_summary()) continue;
    for (const tensorflow::Summary::Value& v : event.summary().value()) {
      if (v.value_case() != tensorflow::Summary::Value::kSimpleValue) continue;
      scalars.push_back(ScalarEvent{event.step(), event.wall_time(), v.tag(), v.simple_value()});
    }
  }
  return scalars;
}

}  // namespace ic
