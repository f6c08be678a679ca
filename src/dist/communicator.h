// Data-parallel training's collective operations: one process per replica, every process runs
// the same step on its share of the global batch, and the gradients are averaged across them
// before the optimizer. A Communicator works on host memory; DeviceReducer (device_reducer.h)
// moves device arenas through it.
//
// Every rank must call the same collectives in the same order with the same counts. A failure
// of the transport is not recoverable (the other ranks are blocked in the same call), so the MPI
// implementation keeps MPI's default handler: the whole job stops with MPI's message.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"

namespace ic {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string description() const = 0;  // "MPI, 2 processes"

  // Element-wise sum over all ranks, in place; every rank gets the same result.
  virtual void all_reduce_sum(float* data, size_t count) = 0;
  virtual void all_reduce_sum(double* data, size_t count) = 0;
  // Copies root's bytes to every other rank.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // Stops every process of the job (after an error on one rank, so the others do not wait
  // forever in a collective).
  [[noreturn]] virtual void abort(int exit_code) = 0;
  // Splits the ranks into groups: the ranks that pass the same `group` get a communicator of
  // their own, ranked in this one's order (MPI_Comm_split). Every rank must call it. The group's
  // communicator must be destroyed before this one.
  virtual std::unique_ptr<Communicator> split(int group) = 0;
};

// One process, no transport: the collectives are identities.
std::unique_ptr<Communicator> make_single_process_communicator();

// The communicator the launcher set up: MPI when this process was started by mpirun (Open MPI's
// OMPI_COMM_WORLD_SIZE, or PMI_SIZE / PMIX_RANK of other launchers are set), else the single
// process one. MPI is initialised here and finalised when the communicator is destroyed.
Result<std::unique_ptr<Communicator>> communicator_from_environment();

// True when a launcher started this process as one of several (the check above, without
// initialising anything).
bool launched_by_mpi();

// This process's index among the job's processes on this machine, and their number (0 and 1
// without a launcher): one GPU per local process, the cores shared among them.
int local_process_index(int* local_count);

}  // namespace ic
