#!/usr/bin/env bash
# The GPU bring-up check, run on the GPU machine inside the bundle (scripts/gpu/prepare.sh packs
# it; docs/gpu.md has the commands):
#
#   bash .gpu/device-bundle.sh run .gpu/ic-bundle.tar.xz -- bash scripts/gpu/check.sh
#
# Stages, each with its own time limit and log under $OUT (summary.txt has one line per stage):
#   1. nvidia-smi
#   2. every GPU test (CUDA ops against the CPU backend, tiny training against the CPU's loss
#      curve, step capture against plain launches), run from the bundle's test binaries
#   3. full-size Inception v3 (299x299, 1001 classes) on fake data: bf16 and fp32 training with a
#      checkpoint, a resume, an evaluation
#   4. classify --device=cuda against classify on the CPU (fp32 logits, max |dlogit|/max |logit|)
#   5. Fashion-MNIST (docs/fashion-mnist.md's recipe, one process on the GPU), then classify on
#      all 10,000 test images
# STAGES (a list of the names below; all by default) picks stages, so that a short device lease
# can be spent on the ones still failing.
# FM_LIMIT: the Fashion-MNIST stage's time limit in seconds (420).
# Sizes come from the environment so that the same script can be tried on a CPU machine first
# (QUICK=1: tiny sizes; --use_tpu falls back to the CPU there).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${IC_BIN:-$ROOT/build/bin}
OUT=${OUT:-/tmp/ic-gpu-check}
WORK=${WORK:-/tmp/ic-gpu-work}
FMNIST=${FMNIST:-$ROOT/.gpu/fashion-mnist}
mkdir -p "$OUT" "$WORK"
SUMMARY=$OUT/summary.txt
start=$(date +%s)

if [[ ${QUICK:-0} == 1 ]]; then
  SIZE=75 DM=0.25 BATCH=4 STEPS=4 ITER=2 EVAL_IMAGES=8 FM_STEPS=40 FM_EVAL=500 GPU=cpu
else
  SIZE=299 DM=1.0 BATCH=128 STEPS=${STEPS:-200} ITER=${ITER:-50} EVAL_IMAGES=1024
  FM_STEPS=${FM_STEPS:-10000} FM_EVAL=2500 GPU=cuda:0
fi

STAGES=${STAGES:-nvidia_smi gpu_tests fake_bf16 fake_fp32 classify_vs_cpu fashion_mnist}

# stage NAME LIMIT_SECONDS COMMAND...: runs COMMAND with its output in $OUT/NAME.log and a
# summary line; a stage that fails does not stop the ones after it.
stage() {
  local name=$1 limit=$2
  shift 2
  [[ " $STAGES " == *" $name "* ]] || return 0
  local t0=$(date +%s) rc
  echo "=== [$((t0 - start)) s] $name"
  # timeout runs programs, not shell functions: the stage runs in a fresh copy of this script.
  timeout --signal=TERM --kill-after=20 "$limit" bash "$0" __stage "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  local verdict=ok
  ((rc == 124)) && verdict="TIMED OUT after ${limit}s"
  ((rc != 0 && rc != 124)) && verdict="FAILED (exit $rc)"
  printf '%-22s %-28s %4d s\n' "$name" "$verdict" "$(($(date +%s) - t0))" | tee -a "$SUMMARY"
  tail -n 3 "$OUT/$name.log"
  return "$rc"
}

gpu_tests() {
  local rc=0
  "$BIN/backend_test" --gtest_filter='Cuda*' || rc=1
  "$BIN/train_test" --gtest_filter='Cuda*:DeviceFailure*' || rc=1
  return $rc
}

v3() { "$BIN/inception_v3" --use_data=fake --use_tpu=True --width="$SIZE" --height="$SIZE" \
  --depth_multiplier="$DM" --train_batch_size="$BATCH" --iterations="$ITER" \
  --eval_batch_size="$BATCH" --eval_total_size="$EVAL_IMAGES" "$@"; }

fake_training() {
  local dir=$WORK/v3_$1 precision=$1
  rm -rf "$dir"
  # Half the steps, then a resume to the full count, then one evaluation of the last checkpoint.
  v3 --precision="$precision" --mode=train --model_dir="$dir" --train_steps=$((STEPS / 2)) &&
    v3 --precision="$precision" --mode=train --model_dir="$dir" --train_steps="$STEPS" &&
    v3 --precision="$precision" --mode=eval --model_dir="$dir" --train_steps="$STEPS" \
      --eval_timeout=0 &&
    grep -q "model_checkpoint_path: \"model.ckpt-$STEPS\"" "$dir/checkpoint"
}

classify_agrees() {
  local images=$WORK/images
  rm -rf "$images" && mkdir -p "$images"
  "$BIN/make_fake_imagenet" --raw_layout --output_dir="$images" --image_size=400 \
    --num_train_images=0 --num_validation_images=8 || return 1
  local files
  files=$(find "$images/validation" -type f | sort)
  # shellcheck disable=SC2086
  "$BIN/classify" --model_dir="$WORK/v3_float32" --device="$GPU" --logits_out="$WORK/logits_gpu.npy" $files &&
    "$BIN/classify" --model_dir="$WORK/v3_float32" --device=cpu --logits_out="$WORK/logits_cpu.npy" $files &&
    python3 - "$WORK/logits_gpu.npy" "$WORK/logits_cpu.npy" <<'PY'
import ast, struct, sys
def load(path):  # a float32 .npy (what classify --logits_out writes), without numpy
    data = open(path, "rb").read()
    n = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + n].decode())
    assert header["descr"] == "<f4" and not header["fortran_order"], header
    rows, cols = header["shape"]
    values = struct.unpack(f"<{rows * cols}f", data[10 + n:])
    return [values[r * cols:(r + 1) * cols] for r in range(rows)]
gpu, cpu = load(sys.argv[1]), load(sys.argv[2])
diff = max(abs(g - c) for gr, cr in zip(gpu, cpu) for g, c in zip(gr, cr))
scale = max(abs(c) for cr in cpu for c in cr)
argmax = lambda row: max(range(len(row)), key=row.__getitem__)
same = all(argmax(g) == argmax(c) for g, c in zip(gpu, cpu))
print(f"{len(cpu)} images: max |dlogit| / max |logit| = {diff / scale:.3e}, same argmax: {same}")
sys.exit(0 if diff / scale <= 1e-3 and same else 1)
PY
}

# docs/fashion-mnist.md's recipe, written once in scripts/fashion_mnist.sh: one process on the GPU.
fashion_mnist() {
  rm -rf "$WORK/fm/model"
  local t0=$(date +%s)
  BIN=$BIN FMNIST_IDX=$FMNIST PROCESSES=1 TRAIN_STEPS=$FM_STEPS STEPS_PER_EVAL=$FM_EVAL \
    EXTRA_FLAGS=--use_tpu=True CLASSIFY_FLAGS=--device=$GPU \
    bash "$ROOT/scripts/fashion_mnist.sh" "$WORK/fm" || return 1
  echo "Fashion-MNIST end to end (conversion done once): $(($(date +%s) - t0)) s on $GPU"
}

if [[ ${1:-} == __stage ]]; then
  shift
  "$@"
  exit
fi

: >"$SUMMARY"
rc=0
stage nvidia_smi 30 nvidia-smi || true
stage gpu_tests 240 gpu_tests || rc=1
stage fake_bf16 240 fake_training bfloat16 || rc=1
stage fake_fp32 240 fake_training float32 || rc=1
stage classify_vs_cpu 120 classify_agrees || rc=1
stage fashion_mnist "${FM_LIMIT:-420}" fashion_mnist || rc=1
grep -hE "^(step|Saving dict|examples/sec)" "$OUT"/fake_*.log "$OUT"/fashion_mnist.log 2>/dev/null |
  tail -n 40 >"$OUT/highlights.txt"
echo "=== total $(($(date +%s) - start)) s; summary in $SUMMARY"
cat "$SUMMARY"
exit $rc
