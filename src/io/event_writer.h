// TensorBoard event files: events.out.tfevents.<unix secs>.<hostname> holding TFRecord-framed
// tensorflow.Event protos (proto/event.proto). The first event carries file_version
// "brain.Event:2"; each scalar is an Event{wall_time, step, summary{value{tag, simple_value}}},
// which is what tf.summary.scalar / TPUEstimator's summaries write and TensorBoard reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "io/file_system.h"

namespace ic {

class EventWriter {
 public:
  // Creates `dir` (and parents) if needed and a new event file in it. When a file of that name
  // already exists (two writers in one second) a ".<n>" suffix keeps them apart.
  static Result<std::unique_ptr<EventWriter>> create(const std::string& dir);
  ~EventWriter();  // flushes and closes quietly (errors are lost: call close() to see them)
  // Flushes and closes; later adds fail.
  Status close();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  Status add_scalar(const std::string& tag, double value, int64_t step);
  // Several scalars of one step in one Event (as Estimator writes eval results).
  Status add_scalars(const std::vector<std::pair<std::string, double>>& values, int64_t step);
  // A summary for a TensorBoard plugin (tag, plugin name, the plugin's serialized message),
  // with an empty tensor as its value: what the HParams dashboard reads.
  Status add_plugin_summary(const std::string& tag, const std::string& plugin_name,
                            const std::string& content, int64_t step);
  // Makes the events so far visible to TensorBoard (another process): locally a flush to the
  // OS, in a bucket a rewrite of the whole object (objects cannot be appended to).
  Status flush();
  const std::string& path() const { return path_; }

 private:
  struct Token {  // lets create() use make_unique while nobody else constructs a writer
    explicit Token() = default;
  };

 public:
  explicit EventWriter(Token) {}

 private:
  Status write_event(const std::string& serialized);

  std::unique_ptr<WritableFile> file_;
  std::string path_;
};

// Seconds since the Unix epoch with microseconds, the Event.wall_time clock.
double event_wall_time();

}  // namespace ic
