#include "infer/model_export.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/unique_fd.h"
#include "infer/onnx_export.h"
#include "infer/onnx_qdq.h"
#include "infer/saved_model_export.h"
#include "infer/warmup_export.h"
#include "io/checkpoint_dir.h"
#include "io/export_versions.h"
#include "io/file_system.h"
#include "io/posix_file.h"
#include "io/safetensors.h"

namespace ic {

Status write_safetensors_export(const InferenceModel& model, const std::string& path) {
  std::map<std::string, std::string> metadata = checkpoint_metadata(model.meta);
  metadata["source"] = model.checkpoint;
  metadata["weights"] = "inference (exponential moving averages where the checkpoint has them)";
  std::vector<TensorView> tensors;
  for (const auto& [name, entry] : model.weights)
    tensors.push_back(TensorView{name, entry.dtype, entry.shape, entry.bytes.data()});
  const int64_t step = model.global_step;
  tensors.push_back(TensorView{"global_step", DType::i64, Shape{}, &step});
  return write_safetensors(path, metadata, tensors);
}

Status write_int8_export(const InferenceModel& model, const std::string& path) {
  if (!model.int8) return invalid_argument("an int8 export needs the model's int8 calibration");
  const QuantizationTable& table = *model.int8;
  std::map<std::string, std::string> metadata = checkpoint_metadata(model.meta);
  metadata["source"] = model.checkpoint;
  metadata["weights"] = "inference (exponential moving averages where the checkpoint has them)";
  metadata["precision"] = "int8";
  metadata["calibration_images"] = std::to_string(table.calibration_images);
  metadata["calibration_data"] = table.calibration_data;

  // The int8 weights the views below point at (the scales are the table's own).
  std::map<std::string, std::vector<int8_t>> quantized;
  for (const auto& [layer, q] : table.layers) {
    const std::string weights_name = layer + "/weights";
    auto w = model.weights.find(weights_name);
    if (w == model.weights.end())
      return not_found(model.checkpoint, ": no tensor ", weights_name, " for int8 layer ", layer);
    const size_t count = w->second.bytes.size() / sizeof(float);
    const size_t channels = q.weight_scales.size();
    if (channels == 0 || count % channels != 0)
      return invalid_argument("int8 layer ", layer, ": ", channels, " weight scales for ",
                              w->second.shape.str(), " weights");
    std::vector<float> values(count);
    std::memcpy(values.data(), w->second.bytes.data(), count * sizeof(float));
    // HWIO: the output channel is innermost.
    quantized[weights_name] = quantize_weights(values, q.weight_scales, ChannelAxis::inner);
  }
  std::vector<TensorView> tensors;
  for (const auto& [name, entry] : model.weights) {
    auto q = quantized.find(name);
    if (q == quantized.end()) {
      tensors.push_back(TensorView{name, entry.dtype, entry.shape, entry.bytes.data()});
    } else {
      tensors.push_back(TensorView{name, DType::s8, entry.shape, q->second.data()});
    }
  }
  for (const auto& [layer, q] : table.layers) {
    tensors.push_back(TensorView{int8_weight_scales_name(layer), DType::f32,
                                 Shape{static_cast<int64_t>(q.weight_scales.size())},
                                 q.weight_scales.data()});
    tensors.push_back(
        TensorView{int8_input_scale_name(layer), DType::f32, Shape{1}, &q.input_scale});
  }
  const int64_t step = model.global_step;
  tensors.push_back(TensorView{"global_step", DType::i64, Shape{}, &step});
  return write_safetensors(path, metadata, tensors);
}

namespace {

// Makes the rename that published a local export durable.
Status fsync_directory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return error(dir, ": cannot open to fsync: ", std::strerror(errno));
  if (::fsync(fd.get()) != 0) return error(dir, ": fsync failed: ", std::strerror(errno));
  return Status();
}

// Writes the model's files into `dir`. Each writer puts the file a poller waits for last:
// saved_model.pb after variables/, and the other formats are one file each.
Status write_model_files(const InferenceModel& model, const std::string& dir, ExportFormat format) {
  switch (format) {
    case ExportFormat::saved_model: return write_saved_model(model, dir);
    case ExportFormat::safetensors:
      return write_safetensors_export(model, join_path(dir, "model.safetensors"));
    case ExportFormat::onnx: return export_onnx(model, join_path(dir, "model.onnx"));
    case ExportFormat::int8:
      if (!model.int8) return invalid_argument("an int8 export needs the model's int8 calibration");
      IC_RETURN_IF_ERROR(export_onnx(model, join_path(dir, "model.onnx")));
      return write_int8_export(model, join_path(dir, "model.safetensors"));
  }
  return error("unknown export format");
}

// The warm-up requests (when there are images), the extra files and then the model's files.
Status write_export(const InferenceModel& model, const std::string& dir, ExportFormat format,
                    const std::vector<std::string>& warmup_images,
                    const std::map<std::string, std::string>& extra_files) {
  if (!warmup_images.empty())
    IC_RETURN_IF_ERROR(write_warmup_requests(dir, model.meta.model, warmup_images));
  for (const auto& [name, contents] : extra_files) {
    const std::string path = join_path(dir, name);
    IC_RETURN_IF_ERROR(make_dirs(parent_path(path)));
    IC_RETURN_IF_ERROR(write_file_atomically(path, {contents}));
  }
  return write_model_files(model, dir, format);
}

// Deletes what a failed object-store export left under `dir` (best effort: the export's
// marker file was never written, so a poller ignores the rest anyway).
void remove_object_tree(FileSystem& fs, const std::string& dir) {
  Result<std::vector<DirEntry>> entries = fs.list(dir);
  if (!entries.ok()) return;
  for (const DirEntry& entry : *entries) {
    const std::string path = join_path(dir, entry.name);
    if (entry.is_directory) {
      remove_object_tree(fs, path);
    } else {
      (void)fs.remove(path);
    }
  }
}

// The first free second from now on (two exports in one second get consecutive numbers),
// from a listing of `export_dir` through the seam.
Result<int64_t> free_version(FileSystem& fs, const std::string& export_dir) {
  IC_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs.list(export_dir));
  std::set<std::string> taken;
  for (const DirEntry& entry : entries) taken.insert(entry.name);
  int64_t version = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  while (taken.count(std::to_string(version)) || taken.count("temp-" + std::to_string(version)))
    ++version;
  return version;
}

// A local export holds an exclusive flock on its temp-N directory until the rename; the kernel
// drops it when the exporter dies, however it dies. So a temp-N that can be locked belongs to
// no live export: a killed one left it, and it is removed. One still being written is kept.
Result<UniqueFd> lock_export_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return error("cannot open ", dir, ": ", std::strerror(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return unavailable(dir, " is being written by another export");
  return fd;
}

void remove_abandoned_exports(const std::string& export_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(export_dir, ec)) {
    const std::string name = entry.path().filename();
    if (name.rfind("temp-", 0) != 0 || !entry.is_directory(ec)) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    Result<UniqueFd> abandoned = lock_export_dir(entry.path());
    if (abandoned.ok()) std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace

Result<std::string> export_trained_model(const InferenceModel& model, const std::string& export_dir,
                                         ExportFormat format,
                                         const std::vector<std::string>& warmup_images,
                                         const std::map<std::string, std::string>& extra_files) {
  if (export_dir.empty()) return error("no export directory given");
  // A missing or undecodable image fails before anything is written.
  IC_ASSIGN_OR_RETURN(std::vector<std::string> warmup, read_warmup_images(warmup_images));
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(export_dir));
  Status made = fs->make_dirs(export_dir);
  if (!made.ok())
    return error(made.code(), "cannot create the export directory ", export_dir, ": ",
                 made.message());
  if (!fs->writes_appear_whole()) remove_abandoned_exports(export_dir);
  IC_ASSIGN_OR_RETURN(int64_t version, free_version(*fs, export_dir));
  const std::string final_dir = join_path(export_dir, std::to_string(version));

  if (fs->writes_appear_whole()) {
    // An object store has no directory rename: the files go straight into the version's
    // prefix, the marker file (saved_model.pb, model.onnx, model.safetensors) last.
    Status written = write_export(model, final_dir, format, warmup, extra_files);
    if (!written.ok()) {
      remove_object_tree(*fs, final_dir);
      return error(written.code(), "export to ", export_dir, " failed: ", written.message());
    }
    return final_dir;
  }

  // Locally: a temp directory renamed into place, so the version appears complete at once.
  const std::string temp_dir = join_path(export_dir, "temp-" + std::to_string(version));
  std::error_code ec;
  const bool created = std::filesystem::create_directory(temp_dir, ec);
  if (ec || !created) {
    return ec ? error("cannot create ", temp_dir, ": ", ec.message())
              : already_exists("cannot create ", temp_dir, ": it exists");
  }
  // Taken at once: between the create and the lock, another export's sweep could take this
  // directory for an abandoned one (then the lock fails and this export stops cleanly).
  Result<UniqueFd> held = lock_export_dir(temp_dir);
  if (!held.ok())
    return error(held.status().code(), "export to ", export_dir,
                 " failed: ", held.status().message());
  Status written = write_export(model, temp_dir, format, warmup, extra_files);
  if (written.ok()) {
    written = fs->rename(temp_dir, final_dir);
    if (written.ok()) {
      written = fsync_directory(export_dir);
      if (!written.ok()) return written;  // the export is complete, only not yet durable
    }
  }
  if (!written.ok()) {
    std::filesystem::remove_all(temp_dir, ec);
    return error(written.code(), "export to ", export_dir, " failed: ", written.message());
  }
  return final_dir;
}

Result<std::string> export_checkpoint_saved_model(
    const std::string& model_dir, const std::string& checkpoint, const std::string& export_dir,
    const std::map<std::string, std::string>& extra_files) {
  IC_ASSIGN_OR_RETURN(InferenceModel model, load_for_inference(model_dir, checkpoint));
  return export_trained_model(model, export_dir, ExportFormat::saved_model, {}, extra_files);
}

Result<std::string> export_newest_saved_model(const std::string& model_dir,
                                              const std::string& export_dir) {
  if (model_dir.empty()) return error("no --model_dir to export a checkpoint from");
  IC_ASSIGN_OR_RETURN(std::optional<std::string> newest, latest_checkpoint(model_dir));
  if (!newest) return not_found("no checkpoint in ", model_dir, " to export");
  return export_checkpoint_saved_model(model_dir, *newest, export_dir, {});
}

Status remove_export(const std::string& dir) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(dir));
  if (fs->writes_appear_whole()) {
    for (const std::string& marker : export_marker_files()) {
      const std::string path = join_path(dir, marker);
      IC_ASSIGN_OR_RETURN(bool there, fs->exists(path));
      if (there) IC_RETURN_IF_ERROR(fs->remove(path));
    }
    remove_object_tree(*fs, dir);
    return Status();
  }
  const std::string export_dir = parent_path(dir);
  const std::string gone = join_path(export_dir, "temp-" + base_name(dir));
  IC_RETURN_IF_ERROR(fs->rename(dir, gone).with_context("cannot remove the export " + dir));
  std::error_code ec;
  std::filesystem::remove_all(gone, ec);
  if (ec) return error("cannot remove ", gone, ": ", ec.message());
  return Status();
}

}  // namespace ic
