#include "train/sweep_config.h"

#include <algorithm>
#include <set>

#include "io/json.h"

namespace ic {
namespace {

// Flags every variant's run gets from the sweep itself.
const std::set<std::string>& flags_the_sweep_sets() {
  static const std::set<std::string> names = {
      "mode",        "model_dir",        "export_dir",      "export_best",
      "train_steps", "export_best_mode", "exports_to_keep", "stop_at_step"};
  return names;
}

constexpr size_t kMaxVariants = 10000;

// "inception_v3, inception_v4, resnet50"
std::string listed(const std::vector<std::string>& models) {
  std::string names;
  for (const std::string& name : models) names += (names.empty() ? "" : ", ") + name;
  return names;
}

Status check_model(const std::string& name, const std::vector<std::string>& models,
                   const std::string& where) {
  if (std::find(models.begin(), models.end(), name) != models.end()) return Status();
  return invalid_argument(where, ": unknown model \"", name, "\" (", listed(models), ")");
}

// A flag value as the command line spells it.
Result<std::string> flag_text(const JsonValue& v, const std::string& where) {
  switch (v.kind) {
    case JsonValue::Kind::number:
    case JsonValue::Kind::string: return v.text;
    case JsonValue::Kind::boolean: return std::string(v.boolean ? "true" : "false");
    default: return invalid_argument(where, ": a flag's value must be a number, string or boolean");
  }
}

Status check_flag_name(const std::string& name, const std::string& where) {
  if (name.empty() ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    return invalid_argument(where, ": \"", name, "\" is not a flag name (lower case, digits, _)");
  if (flags_the_sweep_sets().contains(name))
    return invalid_argument(where, ": --", name, " is set by the sweep for each variant");
  return Status();
}

Result<std::vector<FlagSetting>> flag_object(const JsonValue& object, const std::string& where) {
  if (object.kind != JsonValue::Kind::object)
    return invalid_argument(where, " must be an object of flag names and values");
  std::vector<FlagSetting> flags;
  std::set<std::string> seen;
  for (const auto& [name, value] : object.members) {
    IC_RETURN_IF_ERROR(check_flag_name(name, where));
    if (!seen.insert(name).second) return invalid_argument(where, ": --", name, " twice");
    IC_ASSIGN_OR_RETURN(std::string text, flag_text(value, where + "." + name));
    flags.emplace_back(name, text);
  }
  return flags;
}

// "learning_rate=0.1_depth_multiplier=0.5", with anything a directory name should not hold
// turned into '-'.
std::string variant_name(size_t index, const std::vector<FlagSetting>& flags) {
  std::string name = std::to_string(index);
  if (index < 10) name.insert(name.begin(), '0');
  for (const auto& [flag, value] : flags) name += "_" + flag + "=" + value;
  for (char& c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '=' || c == '.' || c == '-';
    if (!plain) c = '-';
  }
  if (name.size() > 200) name.resize(200);
  return name;
}

}  // namespace

Result<SweepConfig> parse_sweep_config(const std::string& text, const std::string& path,
                                       const std::vector<std::string>& models) {
  Result<JsonValue> parsed = parse_json(text);
  if (!parsed.ok()) return invalid_argument(path, ": not JSON: ", parsed.status().message());
  const JsonValue& root = *parsed;
  if (root.kind != JsonValue::Kind::object) return invalid_argument(path, ": not a JSON object");
  static const std::set<std::string> known = {"trainer", "flags", "grid",   "variants",
                                              "metric",  "mode",  "budget", "schedule"};
  for (const auto& member : root.members) {
    if (!known.contains(member.first))
      return invalid_argument(path, ": unknown key \"", member.first,
                              "\" (known: trainer, flags, grid, variants, metric, mode, schedule, "
                              "budget)");
  }
  SweepConfig config;
  const JsonValue* trainer = root.find("trainer");
  if (trainer == nullptr || trainer->kind != JsonValue::Kind::string)
    return invalid_argument(path, ": \"trainer\" (the model to train: ", listed(models),
                            ") is missing");
  IC_RETURN_IF_ERROR(check_model(trainer->text, models, path + ": \"trainer\""));
  config.trainer = trainer->text;
  if (const JsonValue* flags = root.find("flags")) {
    IC_ASSIGN_OR_RETURN(config.base, flag_object(*flags, path + ": \"flags\""));
    for (const auto& [name, value] : config.base)
      if (name == kSweepModelKey)
        return invalid_argument(path, ": \"flags\": the model of every variant is \"trainer\"");
  }

  // The grid: every combination, the last flag varying fastest.
  std::vector<std::vector<FlagSetting>> sets;
  if (const JsonValue* grid = root.find("grid")) {
    const std::string where = path + ": \"grid\"";
    if (grid->kind != JsonValue::Kind::object || grid->members.empty())
      return invalid_argument(where, " must be an object of flag names and lists of values");
    sets.emplace_back();
    std::set<std::string> seen;
    for (const auto& [name, values] : grid->members) {
      IC_RETURN_IF_ERROR(check_flag_name(name, where));
      if (!seen.insert(name).second) return invalid_argument(where, ": --", name, " twice");
      if (values.kind != JsonValue::Kind::array || values.items.empty())
        return invalid_argument(where, ".", name, " must be a non-empty list of values");
      std::vector<std::vector<FlagSetting>> next;
      for (const std::vector<FlagSetting>& partial : sets) {
        for (const JsonValue& value : values.items) {
          IC_ASSIGN_OR_RETURN(std::string text, flag_text(value, where + "." + name));
          next.push_back(partial);
          next.back().emplace_back(name, text);
          if (next.size() > kMaxVariants)
            return invalid_argument(where, " has more than ", kMaxVariants, " combinations");
        }
      }
      sets = std::move(next);
    }
  }
  if (const JsonValue* list = root.find("variants")) {
    const std::string where = path + ": \"variants\"";
    if (list->kind != JsonValue::Kind::array || list->items.empty())
      return invalid_argument(where, " must be a non-empty list of flag objects");
    for (size_t i = 0; i < list->items.size(); ++i) {
      IC_ASSIGN_OR_RETURN(std::vector<FlagSetting> flags,
                          flag_object(list->items[i], where + "[" + std::to_string(i) + "]"));
      sets.push_back(std::move(flags));
      if (sets.size() > kMaxVariants)
        return invalid_argument(where, ": more than ", kMaxVariants, " variants");
    }
  }
  if (sets.empty()) return invalid_argument(path, ": give \"grid\" or \"variants\" (or both)");
  for (size_t i = 0; i < sets.size(); ++i) {
    SweepVariant v{variant_name(i, sets[i]), sets[i], config.trainer};
    for (const auto& [name, value] : v.flags) {
      if (name != kSweepModelKey) continue;
      IC_RETURN_IF_ERROR(check_model(value, models, path + ": variant " + v.name));
      v.trainer = value;
    }
    config.variants.push_back(std::move(v));
  }

  if (const JsonValue* metric = root.find("metric")) {
    std::optional<ExportBestMetric> m = metric->kind == JsonValue::Kind::string
                                            ? parse_choice<ExportBestMetric>(metric->text)
                                            : std::nullopt;
    if (!m || *m == ExportBestMetric::none)
      return invalid_argument(path, ": \"metric\" must be accuracy, accuracy@5 or loss");
    config.metric = *m;
  }
  if (const JsonValue* mode = root.find("mode")) {
    std::optional<ExportBestMode> m = mode->kind == JsonValue::Kind::string
                                          ? parse_choice<ExportBestMode>(mode->text)
                                          : std::nullopt;
    if (!m) return invalid_argument(path, ": \"mode\" must be auto, max or min");
    config.mode = *m;
  }
  if (const JsonValue* schedule = root.find("schedule")) {
    if (schedule->kind != JsonValue::Kind::string ||
        (schedule->text != "full" && schedule->text != "halving"))
      return invalid_argument(path, ": \"schedule\" must be full or halving");
    config.schedule = schedule->text == "halving" ? SweepSchedule::halving : SweepSchedule::full;
  }
  const JsonValue* budget = root.find("budget");
  const JsonValue* steps = budget != nullptr && budget->kind == JsonValue::Kind::object
                               ? budget->find("train_steps")
                               : nullptr;
  if (steps == nullptr || !steps->as_int64() || *steps->as_int64() < 1)
    return invalid_argument(path, ": \"budget\": {\"train_steps\": N} with N >= 1 is missing");
  config.train_steps = *steps->as_int64();
  const bool halving = config.schedule == SweepSchedule::halving;
  for (const auto& [key, value] : budget->members) {
    if (key == "train_steps") continue;
    if (!halving || (key != "eta" && key != "first_rung_steps"))
      return invalid_argument(path, ": \"budget\" takes only \"train_steps\"",
                              halving ? ", \"eta\" and \"first_rung_steps\""
                                      : " (and \"eta\", \"first_rung_steps\" with "
                                        "\"schedule\": \"halving\")");
    const std::optional<int64_t> n = value.as_int64();
    if (key == "eta") {
      if (!n || *n < 2 || *n > 1000)
        return invalid_argument(path, ": \"budget\": \"eta\" must be an integer from 2 to 1000");
      config.eta = static_cast<int>(*n);
    } else {
      if (!n || *n < 1 || *n >= config.train_steps)
        return invalid_argument(path,
                                ": \"budget\": \"first_rung_steps\" must be an integer from 1 "
                                "to train_steps - 1");
      config.first_rung_steps = *n;
    }
  }
  return config;
}

}  // namespace ic
