#include "dist/device_reducer.h"

namespace ic {

void DeviceReducer::mean(float* data, size_t count) {
  if (comm_.size() == 1 || count == 0) return;
  float* host = data;
  if (host_memory()) {
    backend_.synchronize();
  } else {
    staging_.resize(count);
    backend_.download(staging_.data(), data, count * sizeof(float));
    host = staging_.data();
  }
  comm_.all_reduce_sum(host, count);
  const float scale = 1.f / static_cast<float>(comm_.size());
  for (size_t i = 0; i < count; ++i) host[i] *= scale;
  if (!host_memory()) backend_.upload(data, host, count * sizeof(float));
}

void DeviceReducer::broadcast(float* data, size_t count, int root) {
  if (comm_.size() == 1 || count == 0) return;
  if (host_memory()) {
    backend_.synchronize();
    comm_.broadcast(data, count * sizeof(float), root);
    return;
  }
  staging_.resize(count);
  backend_.download(staging_.data(), data, count * sizeof(float));
  comm_.broadcast(staging_.data(), count * sizeof(float), root);
  backend_.upload(data, staging_.data(), count * sizeof(float));
}

bool DeviceReducer::any(bool flag) {
  if (comm_.size() == 1) return flag;
  double value = flag ? 1.0 : 0.0;
  comm_.all_reduce_sum(&value, 1);
  return value > 0.0;
}

}  // namespace ic
