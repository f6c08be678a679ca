// What a checkpoint holds a model of, as its metadata records it (the bundle's metadata entry,
// or the safetensors __metadata__), and the checks every program that reads one applies.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"
#include "data/preprocessing.h"
#include "io/checkpoint_contents.h"

namespace ic {

struct CheckpointMeta {
  std::string model;
  int64_t num_classes = 0;
  int height = 0, width = 0;
  double depth_multiplier = 1.0;
  std::string flags;  // the command line's flags, for the record
  // The preprocessing the model was trained with, whose evaluation form classify, serve and the
  // SavedModel's image_bytes input apply (metadata "inception" or "vgg"). Checkpoints from
  // before it was recorded were all trained with Inception's.
  PreprocessOptions::Kind preprocessing = PreprocessOptions::Kind::inception;
};
constexpr const char* kCheckpointFormatVersion = "1";

// The kind metadata's `name` stands for; a data_loss error naming `path` for any other name.
Result<PreprocessOptions::Kind> parse_preprocessing(const std::string& name,
                                                    const std::string& path);
std::map<std::string, std::string> checkpoint_metadata(const CheckpointMeta& meta);
// Fails when a key is missing or malformed, naming `path`.
Result<CheckpointMeta> parse_checkpoint_metadata(const std::map<std::string, std::string>& metadata,
                                                 const std::string& path);
// "inception_v3, 1001 classes, depth_multiplier 1, 299x299 images"
std::string describe(const CheckpointMeta& meta);
// The checkpoint's global_step (int64 or int32 scalar); errors name `path`.
Result<int64_t> read_global_step(const CheckpointContents& file, const std::string& path);
// The model, class count and depth multiplier must agree (they decide every tensor shape);
// the message gives both descriptions.
Status check_compatible(const CheckpointMeta& saved, const CheckpointMeta& run,
                        const std::string& path);

}  // namespace ic
