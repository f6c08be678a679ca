// The MPI implementation (Open MPI on Debian). Only the main thread calls MPI, so
// MPI_THREAD_FUNNELED is enough; the input pipeline's threads never touch it.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "dist/communicator.h"

namespace ic {
namespace {

// MPI counts are int: larger arrays go in chunks.
constexpr size_t kMaxChunk = static_cast<size_t>(INT_MAX) / 2;

class MpiCommunicator final : public Communicator {
 public:
  // MPI_COMM_WORLD, whose end is MPI's, or a group split from it, freed when it ends.
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    if (comm_ == MPI_COMM_WORLD) {
      MPI_Finalize();
    } else {
      MPI_Comm_free(&comm_);
    }
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override {
    return "MPI, " + std::to_string(size_) + " processes" +
           (comm_ == MPI_COMM_WORLD ? "" : " (a group of the job's)");
  }

  void all_reduce_sum(float* data, size_t count) override { reduce(data, count, MPI_FLOAT); }
  void all_reduce_sum(double* data, size_t count) override { reduce(data, count, MPI_DOUBLE); }

  void broadcast(void* data, size_t bytes, int root) override {
    auto* bytes_ptr = static_cast<char*>(data);
    for (size_t done = 0; done < bytes; done += kMaxChunk) {
      const int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
      MPI_Bcast(bytes_ptr + done, n, MPI_BYTE, root, comm_);
    }
  }

  // The whole job, also from a group: the other groups' ranks would otherwise wait for this
  // one at the sweep's next barrier.
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

  std::unique_ptr<Communicator> split(int group) override {
    MPI_Comm part = MPI_COMM_NULL;
    MPI_Comm_split(comm_, group, rank_, &part);  // failures: MPI's handler stops the job
    return std::make_unique<MpiCommunicator>(part);
  }

 private:
  template <typename T>
  void reduce(T* data, size_t count, MPI_Datatype type) {
    for (size_t done = 0; done < count; done += kMaxChunk) {
      const int n = static_cast<int>(std::min(kMaxChunk, count - done));
      MPI_Allreduce(MPI_IN_PLACE, data + done, n, type, MPI_SUM, comm_);
    }
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int local_process_index(int* local_count) {
  const char* index = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const char* count = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  *local_count = count ? std::max(1, std::atoi(count)) : 1;
  return index ? std::atoi(index) : 0;
}

Result<std::unique_ptr<Communicator>> communicator_from_environment() {
  if (!launched_by_mpi()) return make_single_process_communicator();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return error("MPI is already initialised in this process");
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    return error("MPI_Init_thread failed");
  }
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    return error("the MPI library does not support MPI_THREAD_FUNNELED");
  }
  return std::unique_ptr<Communicator>(std::make_unique<MpiCommunicator>(MPI_COMM_WORLD));
}

}  // namespace ic
