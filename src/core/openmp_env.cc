#include "core/openmp_env.h"

#include <unistd.h>

#include <cstdlib>

namespace ic {

void use_short_openmp_spin(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) {
    return;
  }
  if (setenv("GOMP_SPINCOUNT", "20000", /*overwrite=*/0) != 0) return;
  execv("/proc/self/exe", argv);
  // execv returns only on failure: run on with libgomp's default (only slower).
}

}  // namespace ic
