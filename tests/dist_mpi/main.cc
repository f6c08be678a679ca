// main() of the MPI test binary: MPI is initialised once for all tests (and finalised after
// them), which gtest_main cannot do.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "dist_mpi/mpi_world.h"

namespace ic::testing {
namespace {
std::unique_ptr<Communicator> the_world;
}  // namespace

Communicator& world() { return *the_world; }

}  // namespace ic::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto comm = ic::communicator_from_environment();
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().message().c_str());
    return 1;
  }
  if ((*comm)->size() < 2) {
    std::fprintf(stderr, "start this test with mpirun -np 2 (or more)\n");
    return 1;
  }
  ic::testing::the_world = std::move(*comm);
  const int result = RUN_ALL_TESTS();
  ic::testing::the_world.reset();  // MPI_Finalize
  return result;
}
