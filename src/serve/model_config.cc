#include "serve/model_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <iterator>
#include <sstream>

#include "io/file_system.h"

namespace ic {
namespace {

namespace tfs = tensorflow::serving;

// A config lists a few models; a file far larger than any config is a mistake, not a config.
constexpr uint64_t kMaxConfigBytes = 16 << 20;

// TextFormat reports problems to an error collector; the first one is what the user sees.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!text_.empty()) return;
    text_ = "line " + std::to_string(line + 1) + " column " + std::to_string(column + 1) + ": " +
            message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

Result<VersionPolicy> policy_from_proto(
    const tfs::FileSystemStoragePathSourceConfig::ServableVersionPolicy& proto,
    const std::string& where) {
  using Proto = tfs::FileSystemStoragePathSourceConfig::ServableVersionPolicy;
  VersionPolicy policy;
  switch (proto.policy_choice_case()) {
    case Proto::kLatest:
      policy.kind = VersionPolicy::Kind::latest;
      // TF Serving treats an unset or zero num_versions as 1.
      policy.num_versions = std::max<int64_t>(1, proto.latest().num_versions());
      break;
    case Proto::kAll: policy.kind = VersionPolicy::Kind::all; break;
    case Proto::kSpecific:
      policy.kind = VersionPolicy::Kind::specific;
      if (proto.specific().versions().empty()) {
        return invalid_argument(where, ": model_version_policy specific lists no versions");
      }
      for (int64_t version : proto.specific().versions()) {
        if (version < 0) {
          return invalid_argument(where, ": model_version_policy specific version ", version,
                                  " is negative");
        }
        policy.versions.insert(version);
      }
      break;
    case Proto::POLICY_CHOICE_NOT_SET: break;  // the default: latest 1
  }
  return policy;
}

}  // namespace

Result<ModelServerSettings> model_settings_from_proto(const tfs::ModelServerConfig& config,
                                                      const std::string& source) {
  if (!config.has_model_config_list()) {
    return invalid_argument(source, ": no model_config_list (the only config serve reads)");
  }
  ModelServerSettings settings;
  std::set<std::string> names;
  for (const tfs::ModelConfig& model : config.model_config_list().config()) {
    const std::string where = source + ": model '" + model.name() + "'";
    if (model.name().empty()) {
      return invalid_argument(source, ": a model config has an empty name (base_path '",
                              model.base_path(), "')");
    }
    if (!names.insert(model.name()).second) {
      return invalid_argument(source, ": model name '", model.name(), "' is listed twice");
    }
    if (model.base_path().empty()) return invalid_argument(where, " has an empty base_path");
    if (!model.model_platform().empty() && model.model_platform() != "tensorflow") {
      return invalid_argument(where, ": model_platform '", model.model_platform(),
                              "' is not served (only \"tensorflow\", or empty)");
    }
    ModelConfigEntry entry;
    entry.name = model.name();
    entry.base_path = model.base_path();
    IC_ASSIGN_OR_RETURN(entry.policy, policy_from_proto(model.model_version_policy(), where));
    for (const auto& [label, version] : model.version_labels()) {
      if (label.empty()) return invalid_argument(where, ": a version label is empty");
      if (version < 0) {
        return invalid_argument(where, ": label '", label, "' points at negative version ",
                                version);
      }
      if (entry.policy.kind == VersionPolicy::Kind::specific &&
          !entry.policy.versions.contains(version)) {
        return invalid_argument(where, ": label '", label, "' points at version ", version,
                                ", which model_version_policy does not serve");
      }
      entry.labels.emplace(label, version);
    }
    settings.models.push_back(std::move(entry));
  }
  if (settings.models.empty()) return invalid_argument(source, ": the config lists no models");
  return settings;
}

Result<ModelServerSettings> parse_model_config_text(std::string_view text,
                                                    const std::string& source) {
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  tfs::ModelServerConfig config;
  if (!parser.ParseFromString(std::string(text), &config)) {
    return invalid_argument(source, ": not a ModelServerConfig in protobuf text format: ",
                            errors.text().empty() ? "unreadable" : errors.text());
  }
  return model_settings_from_proto(config, source);
}

Result<ModelServerSettings> read_model_config_file(const std::string& path) {
  Result<std::string> text = read_file_to_string(path, kMaxConfigBytes);
  if (!text.ok()) return text.status().with_context("--model_config_file " + path);
  return parse_model_config_text(*text, path);
}

std::set<int64_t> select_versions(const VersionPolicy& policy, const std::set<int64_t>& available) {
  switch (policy.kind) {
    case VersionPolicy::Kind::all: return available;
    case VersionPolicy::Kind::specific: {
      std::set<int64_t> chosen;
      std::set_intersection(available.begin(), available.end(), policy.versions.begin(),
                            policy.versions.end(), std::inserter(chosen, chosen.end()));
      return chosen;
    }
    case VersionPolicy::Kind::latest: break;
  }
  std::set<int64_t> chosen;
  for (auto it = available.rbegin();
       it != available.rend() && static_cast<int64_t>(chosen.size()) < policy.num_versions; ++it)
    chosen.insert(*it);
  return chosen;
}

}  // namespace ic
