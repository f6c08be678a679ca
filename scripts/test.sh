#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite twice: an optimised build
# (followed by the memory-estimate check, the TensorFlow interop check, tests/interop/run.sh, and
# the cloud-storage check against an emulator, tests/storage/run.sh),
# then an AddressSanitizer + UndefinedBehaviorSanitizer build; then fuzzes every parser of
# outside bytes for a short while (fuzz/run.sh). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# How long each step took, printed at the end (also when a step fails), so a slow step shows
# in the last lines of a CI log.
started=$SECONDS
step_start=$SECONDS
step_name="install"
timings=()
step() {
  timings+=("$(printf '%-28s %5d s' "$step_name" $((SECONDS - step_start)))")
  step_name=$1
  step_start=$SECONDS
}
print_timings() {
  local rc=$?
  timings+=("$(printf '%-28s %5d s' "$step_name" $((SECONDS - step_start)))")
  printf 'test.sh steps (exit %d, %d s in all):\n' "$rc" $((SECONDS - started))
  printf '  %s\n' "${timings[@]}"
}
trap print_timings EXIT
bash scripts/install-deps.sh
jobs=$(nproc)

step "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
step "release ctest"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 900)
# The trainer's memory estimate against the measured peak, full-size Inception v3 (~40 s).
step "memory estimate"
bench/memory_estimate.sh 4 16
# TensorFlow itself reads our checkpoints and we read its own (a cached venv from PyPI).
step "interop"
bash tests/interop/run.sh
# serve's gRPC front end through TensorFlow Serving's own Python client (the interop venv).
step "grpc client"
bash tests/serve/grpc_client_run.sh
# gs:// end to end against the Cloud Storage emulator, with injected faults (a cached venv).
step "storage"
bash tests/storage/run.sh

# The sanitizer build leaves out the CUDA backend (nvcc does not take -fsanitize) and the
# benchmarks (no test runs them), and runs the same tests; oneDNN's JIT code is not
# instrumented but our code around it is.
step "asan build"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIC_SANITIZE=ON -DIC_WITH_CUDA=OFF \
  -DIC_BUILD_BENCH=OFF
cmake --build build-asan -j "$jobs"
# oneDNN runs below AMX here (ONEDNN_MAX_CPU_ISA; no effect on a CPU without AMX): oneDNN
# 2.6's AMX kernels read past the end of heap blocks while they are made and run, harmless under
# glibc's malloc but a SEGV inside libdnnl under ASan's allocator (seen on a Xeon with AMX:
# every test making an AMX bf16 or int8 primitive). oneDNN is not instrumented anyway; its
# AVX-512 bf16 and VNNI kernels still run our bf16 and int8 paths.
step "asan ctest"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 \
   ctest --output-on-failure -j "$jobs" --timeout 1800)

# libFuzzer harnesses (clang, ASan + UBSan): every committed regression input, then 10 s per
# harness (one per parser of outside bytes; with the build from scratch about 5 minutes on a
# shared 2-core VM).
step "fuzz"
bash fuzz/run.sh 10
