// serve's --model_config_file parser (serve/model_config.h): the input is a whole config file,
// TF Serving's ModelServerConfig in protobuf text format. A parse either gives settings that
// keep every promise the model manager relies on (models listed, names unique and non-empty,
// base paths non-empty, a policy that serves at least one version, labels inside a specific
// policy), or an error that names the file.
#include <cstdlib>
#include <set>
#include <string>

#include "fuzz/fuzz_util.h"
#include "fuzz/quiet_protobuf.h"
#include "serve/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr char kSource[] = "models.config";
  ic::Result<ic::ModelServerSettings> settings =
      ic::parse_model_config_text(ic::fuzz::as_view(data, size), kSource);
  if (!settings.ok()) {
    if (settings.status().message().find(kSource) == std::string::npos) std::abort();
    return 0;
  }
  if (settings->models.empty()) std::abort();
  std::set<std::string> names;
  for (const ic::ModelConfigEntry& model : settings->models) {
    if (model.name.empty() || model.base_path.empty()) std::abort();
    if (!names.insert(model.name).second) std::abort();
    const ic::VersionPolicy& policy = model.policy;
    if (policy.kind == ic::VersionPolicy::Kind::latest && policy.num_versions < 1) std::abort();
    if (policy.kind == ic::VersionPolicy::Kind::specific && policy.versions.empty()) std::abort();
    for (const auto& [label, version] : model.labels) {
      if (label.empty() || version < 0) std::abort();
      if (policy.kind == ic::VersionPolicy::Kind::specific && !policy.versions.contains(version))
        std::abort();
    }
    // The policy chooses only among what is there, and something when anything it serves is.
    std::set<int64_t> available = {1, 2, 3};
    available.insert(policy.versions.begin(), policy.versions.end());
    const std::set<int64_t> chosen = ic::select_versions(policy, available);
    for (int64_t v : chosen)
      if (!available.contains(v)) std::abort();
    if (chosen.empty()) std::abort();
  }
  return 0;
}
