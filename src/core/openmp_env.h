// OpenMP's waiting for our programs. libgomp's default lets an idle thread spin for a long
// time (300,000 iterations) before it sleeps; with as many threads as cores on a shared
// machine, a spinning thread takes the core the working one needs (a 299x299 Inception v3
// step on 2 cores ran 2x slower). Never spinning (OMP_WAIT_POLICY=passive) costs small models
// instead: a tiny network's hundreds of short parallel regions each pay a wake-up (a 75x75
// model trained 40% slower). A short spin of 20,000 iterations was as fast as the better of
// the two on both. libgomp reads its environment once, when it is loaded (before main), so
// a program must set it and start itself again.
#pragma once

namespace ic {

// Called first in main(): when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets
// GOMP_SPINCOUNT=20000 and re-executes the program (/proc/self/exe) with the same arguments.
// Returns normally when the user chose a policy, after the re-execution, or when it fails.
void use_short_openmp_spin(char** argv);

}  // namespace ic
