#include "dist/device_reducer.h"

#include <chrono>

namespace ic {

// Runs `op` on the arena's values in host memory: the arena itself on the CPU (once the backend
// has finished writing it), a staged copy elsewhere, written back afterwards.
template <typename Op>
void DeviceReducer::on_host(float* data, size_t count, Op op) {
  if (host_memory()) {
    backend_.synchronize();
    op(data);
    return;
  }
  staging_.resize(count);
  backend_.download(staging_.data(), data, count * sizeof(float));
  op(staging_.data());
  backend_.upload(data, staging_.data(), count * sizeof(float));
}

void DeviceReducer::mean(float* data, size_t count) {
  if (comm_.size() == 1 || count == 0) return;
  on_host(data, count, [&](float* host) {
    const auto start = std::chrono::steady_clock::now();
    comm_.all_reduce_sum(host, count);
    all_reduce_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const float scale = 1.f / static_cast<float>(comm_.size());
    for (size_t i = 0; i < count; ++i) host[i] *= scale;
  });
}

void DeviceReducer::broadcast(float* data, size_t count, int root) {
  if (comm_.size() == 1 || count == 0) return;
  on_host(data, count, [&](float* host) { comm_.broadcast(host, count * sizeof(float), root); });
}

double DeviceReducer::mean(double value) {
  if (comm_.size() == 1) return value;
  comm_.all_reduce_sum(&value, 1);
  return value / comm_.size();
}

bool DeviceReducer::any(bool flag) { return mean(flag ? 1.0 : 0.0) > 0.0; }

}  // namespace ic
