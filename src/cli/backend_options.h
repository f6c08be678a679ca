// The BackendOptions a program's --device and --num_threads ask for: the one place every
// program (the trainers and every tool) turns those two flags into a backend, so a thread count
// beyond the machine's cores is capped, with the same notice, everywhere.
#pragma once

#include <string>

#include "backend/backend.h"
#include "cli/device.h"
#include "core/status.h"

namespace ic {

// This process among the job's processes on one machine (mpirun starts several): each takes
// one GPU by its index, and they share the cores.
struct LocalProcess {
  int index = 0;
  int count = 1;
};

struct BackendChoice {
  BackendOptions options;
  // Non-empty when --num_threads was capped at the core count: "--num_threads=100000 is more
  // than the 8 cores of this machine; using 8". The program prints it, prefixed by its name.
  std::string notice;
};

// `device` cpu: the CPU; cuda: GPU cuda_index, or the local process's index for plain "cuda".
// `num_threads` (CPU compute threads): 0 means all cores, shared equally among the local
// processes; more than the cores is capped at the core count (oneDNN / OpenMP with far more
// threads than cores only thrashes, and 100000 of them exhaust the process's stacks). An unset
// device or a negative thread count is an error.
Result<BackendChoice> backend_options_for(const DeviceChoice& device, int num_threads,
                                          LocalProcess local = {});

// std::thread::hardware_concurrency(), at least 1.
int machine_cores();

}  // namespace ic
