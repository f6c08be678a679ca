#include "io/event_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "io/tfrecord.h"
#include "proto/event.pb.h"

namespace ic {
namespace {

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

double event_wall_time() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(now).count()) /
         1e6;
}

Result<std::unique_ptr<EventWriter>> EventWriter::create(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return error(dir, ": cannot create directory: ", ec.message());

  const double wall_time = event_wall_time();
  // TF's EventsWriter: "%s.out.tfevents.%010lld.%s" with the prefix "events".
  char stem[64];
  std::snprintf(stem, sizeof(stem), "events.out.tfevents.%010" PRId64 ".",
                static_cast<int64_t>(wall_time));
  const std::string base = (std::filesystem::path(dir) / (stem + hostname())).string();

  auto writer = std::make_unique<EventWriter>(Token{});
  for (int attempt = 0; attempt < 1000 && !writer->file_; ++attempt) {
    writer->path_ = attempt == 0 ? base : base + "." + std::to_string(attempt);
    // "x": never append to (or clobber) another writer's file.
    writer->file_.reset(std::fopen(writer->path_.c_str(), "wbx"));
    if (!writer->file_ && errno != EEXIST) {
      return error(writer->path_, ": cannot create event file: ", std::strerror(errno));
    }
  }
  if (!writer->file_) return error(base, ": cannot find a free event file name");

  tensorflow::Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  IC_RETURN_IF_ERROR(writer->write_event(event.SerializeAsString()));
  IC_RETURN_IF_ERROR(writer->flush());
  return writer;
}

EventWriter::~EventWriter() {
  if (file_) std::fflush(file_.get());
}

Status EventWriter::write_event(const std::string& serialized) {
  const std::string record = frame_tfrecord(serialized);
  if (std::fwrite(record.data(), 1, record.size(), file_.get()) != record.size()) {
    return error(path_, ": write failed: ", std::strerror(errno));
  }
  return Status();
}

Status EventWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  return add_scalars({{tag, value}}, step);
}

Status EventWriter::add_scalars(const std::vector<std::pair<std::string, double>>& values,
                                int64_t step) {
  tensorflow::Event event;
  event.set_wall_time(event_wall_time());
  event.set_step(step);
  tensorflow::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : values) {
    tensorflow::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return write_event(event.SerializeAsString());
}

Status EventWriter::flush() {
  if (std::fflush(file_.get()) != 0) return error(path_, ": flush failed: ", std::strerror(errno));
  return Status();
}

}  // namespace ic
