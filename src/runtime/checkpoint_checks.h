// What a checkpoint read from disk must satisfy before a program builds a network from it or
// computes with it, beyond what the file format itself checks (io/safetensors.h): metadata
// within sane ranges (a header claiming 100000x100000 images must not make classify try to
// build that network) and finite values (NaN/Inf weights would "classify" into garbage).
#pragma once

#include <string>

#include "core/status.h"
#include "io/safetensors.h"
#include "runtime/checkpoint_meta.h"

namespace ic {

// Image sizes up to this per side, class counts up to this: far beyond any real model here.
constexpr int kMaxCheckpointImageSide = 4096;
constexpr int64_t kMaxCheckpointClasses = 1000000;

// Error naming `path` and the field when the image size, class count or depth multiplier is
// out of range.
Status check_checkpoint_meta(const CheckpointMeta& meta, const std::string& path);

// Error naming `path`, the tensor and the element when a floating-point tensor holds NaN or Inf.
Status check_checkpoint_values(const SafetensorsFile& file, const std::string& path);

// Everything a program checks of a checkpoint it read before using it: its metadata parses
// and is in range, and its values are finite. Returns the metadata.
Result<CheckpointMeta> checked_checkpoint_meta(const CheckpointContents& file,
                                               const std::string& path);

}  // namespace ic
