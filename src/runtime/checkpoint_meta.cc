#include "runtime/checkpoint_meta.h"

#include <cstring>
#include <sstream>

namespace ic {
namespace {

std::string format_double(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

Result<PreprocessOptions::Kind> parse_preprocessing(const std::string& name,
                                                    const std::string& path) {
  if (auto kind = preprocessing_kind(name)) return *kind;
  return data_loss(path, ": checkpoint metadata names preprocessing '", name,
                   "', not inception or vgg");
}

std::map<std::string, std::string> checkpoint_metadata(const CheckpointMeta& meta) {
  return {{"format_version", kCheckpointFormatVersion},
          {"model", meta.model},
          {"num_classes", std::to_string(meta.num_classes)},
          {"height", std::to_string(meta.height)},
          {"width", std::to_string(meta.width)},
          {"depth_multiplier", format_double(meta.depth_multiplier)},
          {"preprocessing", preprocessing_name(meta.preprocessing)},
          {"flags", meta.flags}};
}

Result<CheckpointMeta> parse_checkpoint_metadata(const std::map<std::string, std::string>& metadata,
                                                 const std::string& path) {
  auto get = [&](const char* key) -> Result<std::string> {
    auto it = metadata.find(key);
    if (it == metadata.end()) {
      return error(path, ": checkpoint metadata has no '", key,
                   "' (not written by inception.cpp?)");
    }
    return it->second;
  };
  CheckpointMeta meta;
  try {
    IC_ASSIGN_OR_RETURN(std::string version, get("format_version"));
    if (version != kCheckpointFormatVersion) {
      return error(path, ": checkpoint format version ", version, ", this program reads ",
                   kCheckpointFormatVersion);
    }
    IC_ASSIGN_OR_RETURN(meta.model, get("model"));
    IC_ASSIGN_OR_RETURN(std::string classes, get("num_classes"));
    meta.num_classes = std::stoll(classes);
    IC_ASSIGN_OR_RETURN(std::string height, get("height"));
    meta.height = std::stoi(height);
    IC_ASSIGN_OR_RETURN(std::string width, get("width"));
    meta.width = std::stoi(width);
    IC_ASSIGN_OR_RETURN(std::string depth, get("depth_multiplier"));
    meta.depth_multiplier = std::stod(depth);
  } catch (const std::exception&) {
    return error(path, ": malformed number in checkpoint metadata");
  }
  auto flags = metadata.find("flags");
  if (flags != metadata.end()) meta.flags = flags->second;
  if (auto pre = metadata.find("preprocessing"); pre != metadata.end()) {
    IC_ASSIGN_OR_RETURN(meta.preprocessing, parse_preprocessing(pre->second, path));
  }
  return meta;
}

std::string describe(const CheckpointMeta& meta) {
  std::ostringstream out;
  out << meta.model << ", " << meta.num_classes << " classes, depth_multiplier "
      << meta.depth_multiplier << ", " << meta.height << "x" << meta.width << " images";
  if (meta.preprocessing != PreprocessOptions::Kind::inception)
    out << ", " << preprocessing_name(meta.preprocessing) << " preprocessing";
  return out.str();
}

Status check_compatible(const CheckpointMeta& saved, const CheckpointMeta& run,
                        const std::string& path) {
  if (saved.model == run.model && saved.num_classes == run.num_classes &&
      static_cast<float>(saved.depth_multiplier) == static_cast<float>(run.depth_multiplier)) {
    return Status();
  }
  return error("incompatible model_dir: ", path, " holds ", describe(saved), "; this run is ",
               describe(run),
               " (use another --model_dir, or the flags the checkpoint was trained with)");
}

Result<int64_t> read_global_step(const CheckpointContents& file, const std::string& path) {
  const TensorEntry* step = file.find("global_step");
  if (step == nullptr) return error(path, ": checkpoint has no global_step");
  if (step->dtype == DType::i64 && step->bytes.size() == 8) {
    int64_t value;
    std::memcpy(&value, step->bytes.data(), 8);
    return value;
  }
  if (step->dtype == DType::i32 && step->bytes.size() == 4) {
    int32_t value;
    std::memcpy(&value, step->bytes.data(), 4);
    return int64_t{value};
  }
  return error(path, ": global_step is not an int64 scalar");
}

}  // namespace ic
