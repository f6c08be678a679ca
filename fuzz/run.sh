#!/usr/bin/env bash
# fuzz/run.sh [seconds_per_harness]: builds the libFuzzer harnesses (build-fuzz, clang, ASan +
# UBSan), makes the seed corpora with the project's own writers, runs every committed
# regression input (fuzz/regressions/<harness>/), then fuzzes each harness for
# seconds_per_harness (default 20). Prints executions, exec/s and coverage per harness and
# exits non-zero on any finding (crash, sanitizer report, leak, timeout, out-of-memory).
# Findings are written to build-fuzz/fuzz-work/findings/; the corpus grows across runs in
# build-fuzz/fuzz-work/corpus/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
build=${IC_FUZZ_BUILD_DIR:-build-fuzz}
harnesses=(fuzz_tfrecord fuzz_example fuzz_image fuzz_preprocess fuzz_safetensors fuzz_tensor_bundle fuzz_json
           fuzz_npy fuzz_event fuzz_checkpoint_state fuzz_idx fuzz_synset_labels fuzz_input_position fuzz_predict_request
           fuzz_gcs_json fuzz_int8_export fuzz_http_request fuzz_grpc_predict
           fuzz_warmup fuzz_model_config fuzz_best_export fuzz_sweep_config)
limits=(-rss_limit_mb=2048 -timeout=10)

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DIC_FUZZ=ON -DIC_WITH_CUDA=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"

work="$build/fuzz-work"
rm -rf "$work/seeds" "$work/logs"
mkdir -p "$work/corpus" "$work/findings" "$work/logs"
"$build/bin/make_fuzz_seeds" "$work/seeds"
# The harnesses write their inputs to files under $TMPDIR: a RAM disk when there is one.
tmp_base=/dev/shm
[[ -d $tmp_base && -w $tmp_base ]] || tmp_base="$work"
scratch=$(mktemp -d "$tmp_base/ic_fuzz_run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export TMPDIR="$scratch"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failures=()
printf '%-24s %12s %10s %8s %8s  %s\n' harness executions exec/s cov ft result
for h in "${harnesses[@]}"; do
  bin="$build/bin/$h"
  log="$work/logs/$h.log"
  regressions=()
  if [[ -d fuzz/regressions/$h ]]; then
    mapfile -t regressions < <(find "fuzz/regressions/$h" -type f | sort)
  fi
  if ((${#regressions[@]} > 0)) &&
     ! "$bin" "${limits[@]}" "${regressions[@]}" >"$work/logs/$h.regressions.log" 2>&1; then
    failures+=("$h: a regression input fails again (see $work/logs/$h.regressions.log)")
    printf '%-24s %12s %10s %8s %8s  %s\n' "$h" - - - - "REGRESSION"
    grep -E 'ERROR|SUMMARY|runtime error' "$work/logs/$h.regressions.log" | head -5 || true
    continue
  fi
  mkdir -p "$work/corpus/$h"
  result=ok
  if ! "$bin" "$work/corpus/$h" "$work/seeds/$h" "${limits[@]}" -max_total_time="$seconds" \
       -print_final_stats=1 -artifact_prefix="$work/findings/$h-" >"$log" 2>&1; then
    result=FINDING
    failures+=("$h: see $log and $work/findings/$h-*")
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  printf '%-24s %12s %10s %8s %8s  %s (%d regression inputs)\n' "$h" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "$result" "${#regressions[@]}"
  if [[ $result != ok ]]; then
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -5 || true
  fi
done

if ((${#failures[@]} > 0)); then
  printf 'fuzz: %d finding(s):\n' "${#failures[@]}"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo "fuzz: no findings (${#harnesses[@]} harnesses, ${seconds} s each)"
