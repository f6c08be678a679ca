#include "core/openmp_env.h"

#include <unistd.h>

#include <cstdlib>

namespace ic {

void use_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0) != 0) return;
  execv("/proc/self/exe", argv);
  // execv returns only on failure: run on with the default policy (only slower).
}

}  // namespace ic
