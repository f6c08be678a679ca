#include "infer/model_export.h"

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "infer/onnx_export.h"
#include "infer/saved_model_export.h"
#include "io/checkpoint_dir.h"
#include "io/posix_file.h"
#include "io/safetensors.h"

namespace ic {

namespace fs = std::filesystem;

Result<ExportFormat> parse_export_format(const std::string& name) {
  if (name == "saved_model") return ExportFormat::saved_model;
  if (name == "onnx") return ExportFormat::onnx;
  if (name == "safetensors") return ExportFormat::safetensors;
  return error("unknown export format '", name, "' (allowed: saved_model, onnx, safetensors)");
}

Status write_safetensors_export(const TrainedModel& model, const std::string& path) {
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

namespace {

// Makes the rename that published an export durable.
Status fsync_directory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return error(dir, ": cannot open to fsync: ", std::strerror(errno));
  if (::fsync(fd.get()) != 0) return error(dir, ": fsync failed: ", std::strerror(errno));
  return Status();
}

Status write_export(const TrainedModel& model, const std::string& dir, ExportFormat format) {
  switch (format) {
    case ExportFormat::saved_model: return write_saved_model(model, dir);
    case ExportFormat::safetensors:
      return write_safetensors_export(model, dir + "/model.safetensors");
    case ExportFormat::onnx: return export_onnx(model, dir + "/model.onnx");
  }
  return error("unknown export format");
}

}  // namespace

Result<std::string> export_trained_model(const TrainedModel& model, const std::string& export_dir,
                                         ExportFormat format) {
  if (export_dir.empty()) return error("no export directory given");
  std::error_code ec;
  fs::create_directories(export_dir, ec);
  if (ec) return error("cannot create the export directory ", export_dir, ": ", ec.message());
  // The first free second from now on: two exports in one second get consecutive numbers.
  int64_t version = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  while (fs::exists(export_dir + "/" + std::to_string(version), ec) ||
         fs::exists(export_dir + "/temp-" + std::to_string(version), ec))
    ++version;
  const std::string final_dir = export_dir + "/" + std::to_string(version);
  const std::string temp_dir = export_dir + "/temp-" + std::to_string(version);
  if (!fs::create_directory(temp_dir, ec) || ec)
    return error("cannot create ", temp_dir, ": ", ec ? ec.message() : "it exists");
  Status written = write_export(model, temp_dir, format);
  if (written.ok()) {
    fs::rename(temp_dir, final_dir, ec);
    if (ec) {
      written = error("cannot rename ", temp_dir, " to ", final_dir, ": ", ec.message());
    } else {
      written = fsync_directory(export_dir);
      if (!written.ok()) return written;  // the export is complete, only not yet durable
    }
  }
  if (!written.ok()) {
    fs::remove_all(temp_dir, ec);
    return error("export to ", export_dir, " failed: ", written.message());
  }
  return final_dir;
}

Result<std::string> export_newest_saved_model(const std::string& model_dir,
                                              const std::string& export_dir) {
  if (model_dir.empty()) return error("no --model_dir to export a checkpoint from");
  IC_ASSIGN_OR_RETURN(std::optional<std::string> newest, latest_checkpoint(model_dir));
  if (!newest) return error("no checkpoint in ", model_dir, " to export");
  IC_ASSIGN_OR_RETURN(TrainedModel model, load_trained_model(model_dir, *newest));
  return export_trained_model(model, export_dir, ExportFormat::saved_model);
}

}  // namespace ic
