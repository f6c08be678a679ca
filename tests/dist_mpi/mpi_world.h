// The MPI tests run as one GoogleTest binary started by `mpirun -np 2` (see tests/CMakeLists.txt):
// every rank runs every test, and the tests' collectives must line up across ranks.
#pragma once

#include "dist/communicator.h"

namespace ic::testing {

// The job's communicator, set up by main() before any test runs.
Communicator& world();

}  // namespace ic::testing
