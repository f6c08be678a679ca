// --device, as every program spells it: cpu, cuda (one GPU per local process: the process's
// index among those on its machine) or cuda:N; empty means "not said", which only the trainers
// accept (their --use_tpu then decides). Parsed once into a DeviceChoice; backend_options.h
// turns it into BackendOptions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ic {

struct DeviceChoice {
  enum class Kind { unset, cpu, cuda };
  Kind kind = Kind::unset;
  std::optional<int> cuda_index;  // cuda:N; none for plain "cuda"

  bool operator==(const DeviceChoice&) const = default;
};

// "", "cpu", "cuda", "cuda:N" (N of at most 9 digits); nullopt for anything else ("gpu",
// "cudaz9", "cuda:", "cuda:abc").
std::optional<DeviceChoice> parse_device(std::string_view text);
// The text parse_device reads back.
std::string device_name(const DeviceChoice& device);

}  // namespace ic
