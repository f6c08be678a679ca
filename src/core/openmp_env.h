// OpenMP's waiting for our programs. libgomp's default lets an idle thread spin for a long
// time (300,000 iterations) before it sleeps; with as many threads as cores on a shared
// machine, a spinning thread takes the core the working one needs (a 299x299 Inception v3
// step on 2 cores ran 2x slower). Never spinning (OMP_WAIT_POLICY=passive) costs small models
// instead: a tiny network's hundreds of short parallel regions each pay a wake-up (a 75x75
// model trained 40% slower). A short spin of 20,000 iterations was as fast as the better of
// the two on both. libgomp reads its environment once, when it is loaded (before main), so
// a program must set it and start itself again.
#pragma once

#include <optional>
#include <thread>
#include <utility>

namespace ic {

// Called first in main(): when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets
// GOMP_SPINCOUNT=20000 and re-executes the program (/proc/self/exe) with the same arguments.
// Returns normally when the user chose a policy, after the re-execution, or when it fails.
void use_short_openmp_spin(char** argv);

// Runs `work()` on a new thread and returns its result once that thread has ended.
// OpenMP keeps a team of worker threads for every thread that has run a parallel region, for as
// long as that thread lives; and when libgomp manages more threads than there are cores, it
// spins only briefly before it sleeps, so every parallel region pays a futex wake-up. A model
// compiled (convolution timing, precision timing, warm-up) on one long-lived thread and run on
// another therefore ran every forward slower: on 2 cores, Inception v3 at batch 1 took 15 ms
// on the second thread against 7 ms on the first (serve's batcher thread, 2026-12-02). Work
// whose OpenMP team should not outlive it runs here.
template <typename Work>
auto on_a_thread_of_its_own(Work work) -> decltype(work()) {
  std::optional<decltype(work())> result;
  std::thread([&] { result.emplace(work()); }).join();
  return std::move(*result);
}

}  // namespace ic
