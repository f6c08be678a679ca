// The sweep program's --config (train/sweep_config.h): the input is a whole config file. A
// parse either gives variants that keep the promises the sweep relies on (at least one, at
// most 10000, names unique and safe as directory names, no flag the sweep sets itself, a
// budget of at least one step, successive halving's eta and first rung in range), or an error
// that names the file.
#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "train/sweep_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr char kSource[] = "sweep.json";
  // The models as the registry names them (the harness links io/ only, not the models).
  static const std::vector<std::string> kModels = {"inception_v3", "inception_v4", "resnet50"};
  const std::string text(ic::fuzz::as_view(data, size));
  ic::Result<ic::SweepConfig> config = ic::parse_sweep_config(text, kSource, kModels);
  if (!config.ok()) {
    if (config.status().message().find(kSource) == std::string::npos) std::abort();
    return 0;
  }
  if (config->variants.empty() || config->variants.size() > 10000) std::abort();
  if (config->train_steps < 1 || config->trainer.empty()) std::abort();
  // Every variant is trained by one of the models.
  for (const ic::SweepVariant& v : config->variants)
    if (std::find(kModels.begin(), kModels.end(), v.trainer) == kModels.end()) std::abort();
  // Successive halving: an eta that halves, a first rung inside the budget.
  if (config->eta < 2 || config->first_rung_steps < 0 ||
      config->first_rung_steps >= config->train_steps)
    std::abort();
  static const std::set<std::string> reserved = {
      "mode",        "model_dir",       "export_dir",  "export_best", "export_best_mode",
      "train_steps", "exports_to_keep", "stop_at_step"};
  std::set<std::string> names;
  for (const ic::SweepVariant& v : config->variants) {
    if (v.name.empty() || v.name.size() > 200 || !names.insert(v.name).second) std::abort();
    if (v.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789_=.-") != std::string::npos)
      std::abort();
    for (const auto& [flag, value] : v.flags)
      if (flag.empty() || reserved.contains(flag)) std::abort();
  }
  for (const auto& [flag, value] : config->base)
    if (flag.empty() || reserved.contains(flag)) std::abort();
  return 0;
}
