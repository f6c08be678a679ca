#include "cli/backend_options.h"

#include <algorithm>
#include <thread>

namespace ic {

int machine_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

Result<BackendChoice> backend_options_for(const DeviceChoice& device, int num_threads,
                                          LocalProcess local) {
  if (device.kind == DeviceChoice::Kind::unset) {
    return error("no device chosen (--device: cpu, cuda or cuda:N)");
  }
  if (num_threads < 0) {
    return error("bad value ", num_threads, " for --num_threads (allowed: 0 or more)");
  }
  BackendChoice chosen;
  BackendOptions& b = chosen.options;
  if (device.kind == DeviceChoice::Kind::cuda) {
    b.kind = DeviceKind::cuda;
    b.device_index = device.cuda_index.value_or(local.index);
  }
  const int cores = machine_cores();
  b.num_threads = num_threads;
  if (b.num_threads == 0 && local.count > 1) b.num_threads = std::max(1, cores / local.count);
  if (b.num_threads > cores) {
    chosen.notice = "--num_threads=" + std::to_string(b.num_threads) + " is more than the " +
                    std::to_string(cores) + " cores of this machine; using " +
                    std::to_string(cores);
    b.num_threads = cores;
  }
  return chosen;
}

}  // namespace ic
