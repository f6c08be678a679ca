// The models a server serves, as a plain checked struct: read from a --model_config_file
// (TF Serving's ModelServerConfig in protobuf text format, proto/tensorflow_serving/
// model_server_config.proto), from a HandleReloadConfigRequest's config, or built for
// --model_dir. Every check happens here, so the model manager only applies configs that make
// sense: errors name the source (the file, or "the reload request") and the problem.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "proto/tensorflow_serving/model_server_config.pb.h"

namespace ic {

// Which of a base path's versions are served (TF Serving's ServableVersionPolicy).
struct VersionPolicy {
  enum class Kind { latest, all, specific };
  Kind kind = Kind::latest;
  int64_t num_versions = 1;    // latest
  std::set<int64_t> versions;  // specific
  bool operator==(const VersionPolicy&) const = default;
};

struct ModelConfigEntry {
  // Empty only for --model_dir without --model_name: the first loaded checkpoint's model.
  std::string name;
  std::string base_path;
  VersionPolicy policy;
  std::map<std::string, int64_t> labels;  // version_labels
  bool operator==(const ModelConfigEntry&) const = default;
};

struct ModelServerSettings {
  std::vector<ModelConfigEntry> models;  // in the config's order; names are unique
  bool operator==(const ModelServerSettings&) const = default;
};

// Checks `config` (from `source`, named in errors): a model_config_list; each model with a
// non-empty unique name, a non-empty base_path, model_platform "tensorflow" or empty,
// latest num_versions >= 1 (0: 1), specific with at least one version, and labels that name a
// version the policy can serve (for specific: one of its versions; versions >= 0).
Result<ModelServerSettings> model_settings_from_proto(
    const tensorflow::serving::ModelServerConfig& config, const std::string& source);

// Parses protobuf text `text` (from `source`) and checks it as above.
Result<ModelServerSettings> parse_model_config_text(std::string_view text,
                                                    const std::string& source);

// Reads and parses the file at `path` (local or gs://).
Result<ModelServerSettings> read_model_config_file(const std::string& path);

// The versions of `available` (every servable version in the base path) that `policy` serves.
std::set<int64_t> select_versions(const VersionPolicy& policy, const std::set<int64_t>& available);

}  // namespace ic
