#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds inception.cpp with CUDA, runs the GPU tests, then
# times Inception v3 training at 299x299, ours and torchvision's in the same run:
#   bf16 (torch: autocast) at batch 128, fp32 (torch: TF32 convolutions) at batch 64.
# Prints images/sec, peak device memory, the ratio ours/torch and the model FLOP
# utilisation (training ~ 6 x 5.73 GFLOP per image; 790 TFLOP/s bf16 measured on an H200).
# Everything goes to $OUT/gpu_bench.log. Budget: < 8 minutes on one H200 with 16 cores.
#
#   OUT=/tmp/out bench/gpu/run.sh            env: BUILD (build dir), PYTHON, STEPS, JOBS
# On a GPU machine without our Debian libraries, run it inside the bundle (docs/gpu.md), which
# sets IC_BIN: then nothing is built and the bundle's programs are timed:
#   bash .gpu/device-bundle.sh run .gpu/ic-bundle.tar.xz -- bash bench/gpu/run.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/bench/gpu/out}
BUILD=${BUILD:-$ROOT/build-gpu}
PYTHON=${PYTHON:-python3}
STEPS=${STEPS:-30}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
LOG=$OUT/gpu_bench.log
exec > >(tee "$LOG") 2>&1
start=$(date +%s)
stamp() { echo "=== [$(($(date +%s) - start)) s] $*"; }

stamp "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true

if [[ -n ${IC_BIN:-} ]]; then
  stamp "programs from the bundle: $IC_BIN (no build)"
  BIN=$IC_BIN
else
  stamp "configure + build (Release, CUDA, sm_90)"
  BIN=$BUILD/bin
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DIC_WITH_CUDA=ON \
    >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build "$BUILD" --target backend_test train_test train_bench -j"$JOBS" \
    >"$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
fi

stamp "GPU tests"
tests_rc=0
timeout 240 "$BIN/backend_test" --gtest_filter='Cuda*' --gtest_brief=1 || tests_rc=$?
timeout 240 "$BIN/train_test" --gtest_filter='Cuda*' --gtest_brief=1 || tests_rc=$?
echo "GPU tests exit status: $tests_rc"

results=$OUT/results.txt
: >"$results"
for config in "bfloat16 128" "float32 64"; do
  set -- $config
  stamp "ours: $1 batch $2"
  IC_CUDNN_BENCHMARK=${IC_CUDNN_BENCHMARK:-1} timeout 180 "$BIN/train_bench" \
    --precision="$1" --batch="$2" --steps="$STEPS" --warmup=5 | tee -a "$results"
  stamp "torch: $1 batch $2"
  timeout 180 "$PYTHON" "$ROOT/bench/gpu/torch_inception_bench.py" --precision="$1" \
    --batch="$2" --steps="$STEPS" --warmup=5 | tee -a "$results"
done

stamp "summary"
"$PYTHON" - "$results" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("RESULT "):
        who, *fields = line.split()[1:]
        kv = dict(f.split("=", 1) for f in fields)
        rows[(who, kv["precision"], kv["batch"])] = kv
flop_per_image = 6 * 5.73e9
peak = 790e12
print(f"{'config':<16}{'ours img/s':>12}{'torch img/s':>13}{'ratio':>8}{'ours MFU':>10}"
      f"{'torch MFU':>11}{'ours MiB':>10}{'torch MiB':>11}")
for prec, batch in (("bfloat16", "128"), ("float32", "64")):
    o, t = rows.get(("ours", prec, batch)), rows.get(("torch", prec, batch))
    oi = float(o["images_per_sec"]) if o else float("nan")
    ti = float(t["images_per_sec"]) if t else float("nan")
    print(f"{prec + ' b' + batch:<16}{oi:>12.1f}{ti:>13.1f}{oi / ti if t and o else float('nan'):>8.2f}"
          f"{100 * oi * flop_per_image / peak:>9.1f}%{100 * ti * flop_per_image / peak:>10.1f}%"
          f"{o['peak_mib'] if o else '-':>10}{t['peak_mib'] if t else '-':>11}")
print("MFU against 790 TFLOP/s (bf16 dense peak measured on this GPU) for both precisions.")
PY
stamp "done (log: $LOG)"
exit $tests_rc
