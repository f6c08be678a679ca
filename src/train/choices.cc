#include "train/choices.h"

#include <algorithm>

namespace ic {

const std::vector<ChoiceName<const Optimizer*>>& optimizer_choice_names() {
  static const std::vector<ChoiceName<const Optimizer*>> names = [] {
    std::vector<ChoiceName<const Optimizer*>> out;
    for (const Optimizer& o : optimizer_table()) out.push_back({&o, o.name});
    return out;
  }();
  return names;
}

std::optional<DeviceChoice> parse_device(std::string_view text) {
  if (text.empty()) return DeviceChoice{};
  if (text == "cpu") return DeviceChoice{DeviceChoice::Kind::cpu, std::nullopt};
  if (text == "cuda") return DeviceChoice{DeviceChoice::Kind::cuda, std::nullopt};
  if (text.substr(0, 5) != "cuda:" || text.size() == 5 || text.size() > 14) return std::nullopt;
  const std::string_view digits = text.substr(5);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return DeviceChoice{DeviceChoice::Kind::cuda, std::stoi(std::string(digits))};
}

std::string device_name(const DeviceChoice& device) {
  switch (device.kind) {
    case DeviceChoice::Kind::from_use_tpu: return "";
    case DeviceChoice::Kind::cpu: return "cpu";
    case DeviceChoice::Kind::cuda:
      return device.cuda_index ? "cuda:" + std::to_string(*device.cuda_index) : "cuda";
  }
  return "";
}

}  // namespace ic
