#include "io/event_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

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
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(dir));
  IC_RETURN_IF_ERROR(fs->make_dirs(dir));

  const double wall_time = event_wall_time();
  // TF's EventsWriter: "%s.out.tfevents.%010lld.%s" with the prefix "events".
  char stem[64];
  std::snprintf(stem, sizeof(stem), "events.out.tfevents.%010" PRId64 ".",
                static_cast<int64_t>(wall_time));
  const std::string base = join_path(dir, stem + hostname());

  auto writer = std::make_unique<EventWriter>(Token{});
  for (int attempt = 0; attempt < 1000 && !writer->file_; ++attempt) {
    writer->path_ = attempt == 0 ? base : base + "." + std::to_string(attempt);
    // Exclusive: never append to (or clobber) another writer's file.
    IC_ASSIGN_OR_RETURN(const bool taken, fs->exists(writer->path_));
    if (taken) continue;
    Result<std::unique_ptr<WritableFile>> file = fs->open_write(writer->path_, true);
    if (file.ok()) {
      writer->file_ = std::move(*file);
    } else if (file.status().code() != StatusCode::already_exists) {
      return file.status().with_context("cannot create event file");
    }  // else another writer took the name since exists(): try the next one
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
  if (file_) (void)file_->close();
}

Status EventWriter::close() {
  if (!file_) return Status();
  const std::unique_ptr<WritableFile> file = std::move(file_);
  return file->close();
}

Status EventWriter::write_event(const std::string& serialized) {
  const std::string record = frame_tfrecord(serialized);
  if (!file_) return error(path_, ": write after close");
  return file_->append(record);
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

Status EventWriter::add_plugin_summary(const std::string& tag, const std::string& plugin_name,
                                       const std::string& content, int64_t step) {
  tensorflow::Event event;
  event.set_wall_time(event_wall_time());
  event.set_step(step);
  tensorflow::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  tensorflow::SummaryMetadata::PluginData* plugin = v->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name(plugin_name);
  plugin->set_content(content);
  // An empty float tensor of shape [0], as TensorBoard's own plugin summaries carry.
  tensorflow::TensorProto* tensor = v->mutable_tensor();
  tensor->set_dtype(tensorflow::DT_FLOAT);
  tensor->mutable_tensor_shape()->add_dim()->set_size(0);
  return write_event(event.SerializeAsString());
}

Status EventWriter::flush() {
  if (!file_) return Status();
  return file_->flush();
}

}  // namespace ic
