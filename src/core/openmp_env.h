// OpenMP's wait policy for our programs. libgomp's default lets idle threads spin before they
// sleep; with as many threads as cores, a spinning thread takes the core the working one
// needs, and oneDNN's step on 2 shared cores ran about 2x slower. libgomp reads
// OMP_WAIT_POLICY once, when it is loaded (before main), so a program that wants "passive"
// must set it and start itself again.
#pragma once

namespace ic {

// Called first in main(): when OMP_WAIT_POLICY is unset, sets it to "passive" and re-executes
// the program (/proc/self/exe) with the same arguments. Returns normally when the variable
// was already set (by the user or by the re-execution) or when re-execution fails.
void use_passive_openmp_wait(char** argv);

}  // namespace ic
