// Reads TensorBoard event files back (tests, tools, the trainer's tests).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "proto/event.pb.h"

namespace ic {

struct ScalarEvent {
  int64_t step = 0;
  double wall_time = 0;
  std::string tag;
  float value = 0;
};

// Every event in the file, in order; a bad CRC, a truncated record or an unparsable Event is an
// error naming the file and byte offset.
Result<std::vector<tensorflow::Event>> read_events(const std::string& path);
// The simple_value scalars of every summary in the file, in order.
Result<std::vector<ScalarEvent>> read_scalar_events(const std::string& path);

}  // namespace ic
