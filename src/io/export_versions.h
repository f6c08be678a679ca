// The numbered version directories of an export base directory (<dir>/<N>/, what TensorFlow
// Serving's model_base_path holds): their numbers and paths, through the file-system seam.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ic {

// The value of a version directory's name, or nullopt when it is not all digits (temp-N,
// anything else a person left there).
std::optional<int64_t> export_version_number(const std::string& name);

// The numeric version directories of an export base directory, highest first (none when
// `dir` is not a directory).
Result<std::vector<std::pair<int64_t, std::string>>> export_version_dirs(const std::string& dir);

}  // namespace ic
