// Collectives over device arenas (gradients, weights, moving statistics): in place when the
// backend's memory is host memory (CPU), through a host staging buffer otherwise (a GPU
// without a GPU-aware transport: NCCL is not wired in yet, see docs/distributed.md).
#pragma once

#include <vector>

#include "backend/backend.h"
#include "dist/communicator.h"

namespace ic {

class DeviceReducer {
 public:
  DeviceReducer(Communicator& comm, Backend& backend) : comm_(comm), backend_(backend) {}

  Communicator& comm() const { return comm_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

  // data = mean over ranks of data (count floats of device memory).
  void mean(float* data, size_t count);
  // The mean over ranks of a host value (every rank must call it).
  double mean(double value);
  // Copies root's `count` floats to every rank.
  void broadcast(float* data, size_t count, int root);
  // True on every rank when `flag` is true on at least one.
  bool any(bool flag);
  // Wall seconds spent in the transport's all-reduce of mean(float*) so far: what data
  // parallelism costs on this network (the trainers log it per step).
  double all_reduce_seconds() const { return all_reduce_seconds_; }

 private:
  bool host_memory() const { return backend_.kind() == DeviceKind::cpu; }
  template <typename Op>
  void on_host(float* data, size_t count, Op op);
  Communicator& comm_;
  Backend& backend_;
  std::vector<float> staging_;
  double all_reduce_seconds_ = 0;
};

}  // namespace ic
