// The numbered version directories of an export base directory (<dir>/<N>/, what TensorFlow
// Serving's model_base_path holds): their numbers and paths, through the file-system seam.
#pragma once

#include <cstdint>
#include <map>
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

// The files that make a version directory servable (saved_model.pb, model.onnx,
// model.safetensors): a poller takes a version once one of them is there, so on an object
// store, where a version cannot appear at once, they are written last and deleted first.
const std::vector<std::string>& export_marker_files();

// Copies the export directory `from` (any storage) to `<base_dir>/<version>/` (any storage),
// adding `extra_files` (paths inside the version -> contents), so that a poller of base_dir
// never takes it half-copied: locally through a temp-<version> directory renamed into place; on
// an object store with the marker files last. Returns the version's path.
Result<std::string> copy_export_version(const std::string& from, const std::string& base_dir,
                                        int64_t version,
                                        const std::map<std::string, std::string>& extra_files);

}  // namespace ic
