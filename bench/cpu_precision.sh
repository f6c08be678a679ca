#!/usr/bin/env bash
# One model (MODEL, default Inception v3 at 299x299) on the CPU in each precision, ours against
# its peers, one run on one machine with the same threads. Prints the machine (uptime, CPU model,
# its ISA flags), then images/sec as min/median/max over REPEATS rounds (each round runs every
# configuration once, ours and the peers in turn), ours / peer at the same precision and batch
# (medians), and for ours the achieved GFLOP/s and GB/s
# (inception_bench: Graph::multiply_adds and Graph::bytes_accessed at the median rate), with the
# GFLOP/s as a share of this CPU's measured peak in that number format (bench/cpu_peak.cc):
#   ours        float32 / bfloat16 / int8 inference at batch 1, 8, 32; float32 / bfloat16 training
#               at batch 32 (inception_bench; its int8 scales come from random data: speed only)
#   torch       float32 / bfloat16 (autocast), channels_last, training and inference
#               (bench/peers/torch_model.py: torchvision's network of the same architecture)
#   tensorflow  float32 / mixed_bfloat16, training and inference (bench/peers/tf_model.py:
#               the Keras application)
#   onnxruntime float32 on our ONNX export; openvino float32, its default precision, and int8
#               through NNCF post-training quantization (bench/peers/onnx_model.py)
# The peers run from a virtual environment made once from the pinned PyPI packages of
# bench/peers/requirements.txt (scripts/python_venv.sh). A peer that cannot run (not installed,
# fails) is reported as missing with its reason; the rest of the run goes on.
#
#   bench/cpu_precision.sh                     (build/bin/inception_bench, built if needed)
#   QUICK=1 bench/cpu_precision.sh             checks the script: batch 1 and 8, 2 steps, 1 repeat
#   env: BUILD=build THREADS=2 SIZE=299 REPEATS=3 STEPS=5 WARMUP=2 SKIP_BUILD=1 PYTHON=python3
#        MODEL=inception_v3 (SIZE defaults to 299 for inception_*, else 224)
#        PRECISIONS="float32 bfloat16 int8" (ours and the peers; training leaves out int8)
#        PEERS="torch tensorflow onnxruntime openvino" (the ones to run)
#        INFER_BATCHES="1 8 32" TRAIN_BATCH=32 (0: no training)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${BUILD:-build}
threads=${THREADS:-2}
model=${MODEL:-inception_v3}
size=${SIZE:-$([[ $model == inception_* ]] && echo 299 || echo 224)}
read -r -a precisions <<<"${PRECISIONS:-float32 bfloat16 int8}"
read -r -a peers <<<"${PEERS:-torch tensorflow onnxruntime openvino}"
if [[ ${QUICK:-0} == 1 ]]; then
  read -r -a infer_batches <<<"${INFER_BATCHES:-1 8}"
  train_batch=${TRAIN_BATCH:-8}
  steps=${STEPS:-2}
  warmup=${WARMUP:-1}
  repeats=${REPEATS:-1}
else
  read -r -a infer_batches <<<"${INFER_BATCHES:-1 8 32}"
  train_batch=${TRAIN_BATCH:-32}
  steps=${STEPS:-5}
  warmup=${WARMUP:-2}
  repeats=${REPEATS:-3}
fi
train_precisions=()
for precision in "${precisions[@]}"; do
  [[ $precision == int8 ]] || train_precisions+=("$precision")
done
# wanted LIST WORD: whether WORD is in the space-separated LIST.
wanted() { [[ " $1 " == *" $2 "* ]]; }
export OMP_NUM_THREADS=$threads TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES=""
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source bench/machine.sh
print_machine
echo "model=$model threads=$threads size=${size}x$size steps=$steps warmup=$warmup repeats=$repeats"

[[ ${SKIP_BUILD:-0} == 1 ]] || cmake --build "$build" --target inception_bench >/dev/null || {
  echo "cpu_precision: FAILED: cannot build inception_bench in $build" >&2
  exit 1
}
bench=$build/bin/inception_bench

# This CPU's multiply-add peak per number format (bench/cpu_peak.cc), measured on the same
# threads, so that our GFLOP/s below read as a fraction of it.
declare -A peak_gflops  # "float32" / "bfloat16" / "int8" -> the fastest kernel's GFLOP/s
declare -A peak_kernel  # the same key -> that kernel's name
echo "== peak (bench/cpu_peak.cc: multiply-adds a second of each dot-product instruction)"
if [[ ${SKIP_BUILD:-0} == 1 ]] || cmake --build "$build" --target cpu_peak >/dev/null; then
  while read -r line; do
    echo "$line"
    [[ $line =~ ^peak\ ([a-z0-9_]+)\ threads=.*gflops=([0-9.]+) ]] || continue
    kernel=${BASH_REMATCH[1]}
    gflops=${BASH_REMATCH[2]}
    case $kernel in
      f32_*) format=float32 ;;
      bf16_*) format=bfloat16 ;;
      int8_*) format=int8 ;;
      *) continue ;;
    esac
    if awk -v a="$gflops" -v b="${peak_gflops[$format]:-0}" 'BEGIN { exit !(a > b) }'; then
      peak_gflops[$format]=$gflops
      peak_kernel[$format]=$kernel
    fi
  done < <("$build/bin/cpu_peak" --threads="$threads" 2>&1)
fi
# Without bf16 dot products, bfloat16 computes in float32.
if [[ -z ${peak_gflops[bfloat16]:-} && -n ${peak_gflops[float32]:-} ]]; then
  peak_gflops[bfloat16]=${peak_gflops[float32]}
  peak_kernel[bfloat16]=${peak_kernel[float32]}
fi

declare -A runs     # "who precision mode batch" -> images/sec of each repeat, space separated
declare -A chosen   # the same key -> the precision a peer chose itself (OpenVINO's default)
declare -A per_image  # the same key (ours) -> "GFLOP GB" one image takes (inception_bench)
missing=()          # "who: why" lines
miss() {
  missing+=("$1")
  echo "MISSING $1"
}

# measure KEY COMMAND...: queues COMMAND under KEY. run_rounds then runs `repeats` rounds, each
# running every queued command once in turn: ours and the peers alternate, so a slow spell of
# a shared machine falls on all of them alike rather than on whoever ran during it.
queued_keys=()
queued_commands=()
measure() {
  local key=$1
  shift
  queued_keys+=("$key")
  queued_commands+=("$(printf '%q ' "$@")")
}

# run_once KEY COMMAND...: one run; keeps its images/sec (and what the peer chose, and for ours
# the GFLOP and GB of one image). Fails, saying why, when the command fails or prints no rate.
run_once() {
  local key=$1 out rate status
  shift
  out=$("$@" 2>"$work/err")
  status=$?
  if ((status != 0)); then
    miss "$key: exit status $status$( ((status > 128)) && echo " (signal $((status - 128)))"): $(tail -n 2 "$work/err" | tr '\n' ' ')"
    return 1
  fi
  rate=$(sed -nE 's/.*_images_per_sec=([0-9.]+).*/\1/p' <<<"$out" | tail -n 1)
  [[ -n $rate ]] || {
    miss "$key: no images/sec in its output: $out"
    return 1
  }
  echo "$key: $out"
  runs[$key]+="$rate "
  chosen[$key]=$(sed -nE 's/.*precision=default\(([a-z0-9]+)\).*/\1/p' <<<"$out" | tail -n 1)
  if [[ $out =~ gflops=([0-9.]+).*gbytes_per_sec=([0-9.]+) ]]; then
    per_image[$key]=$(awk -v r="$rate" -v f="${BASH_REMATCH[1]}" -v b="${BASH_REMATCH[2]}" \
      'BEGIN { print f / r, b / r }')
  fi
}

run_rounds() {
  local round i
  declare -A failed=()
  for ((round = 1; round <= repeats; ++round)); do
    echo "== round $round of $repeats"
    for i in "${!queued_keys[@]}"; do
      [[ -z ${failed[${queued_keys[i]}]:-} ]] || continue
      eval "run_once \"\${queued_keys[i]}\" ${queued_commands[i]}" || failed[${queued_keys[i]}]=1
    done
  done
}

echo "== ours"
for precision in "${precisions[@]}"; do
  for batch in "${infer_batches[@]}"; do
    measure "ours $precision infer $batch" "$bench" --model="$model" --mode=infer \
      --precision=$precision --batch="$batch" --size="$size" --threads="$threads" \
      --warmup="$warmup" --steps="$steps"
  done
done
for precision in "${train_precisions[@]}"; do
  ((train_batch > 0)) || break
  measure "ours $precision train $train_batch" "$bench" --model="$model" --mode=train \
    --precision=$precision --batch="$train_batch" --size="$size" --threads="$threads" \
    --warmup="$warmup" --steps="$steps"
done

echo "== peers"
py=""
source scripts/python_venv.sh
if venv=$(cached_venv peers "$root/bench/peers/requirements.txt" "import numpy"); then
  py=$venv/bin/python
else
  miss "all peers: the environment of bench/peers/requirements.txt cannot be made (above)"
fi
# has MODULES: whether the environment imports them (else the peer is reported missing).
has() {
  [[ -n $py ]] && "$py" -c "import $1" 2>"$work/err" && return 0
  [[ -n $py ]] && miss "$2: python cannot import $1: $(tail -n 1 "$work/err")"
  return 1
}

if wanted "${peers[*]}" torch && has "torch, torchvision" torch; then
  echo "torch $("$py" -c 'import torch; print(torch.__version__)')"
  for precision in "${train_precisions[@]}"; do
    flag=$([[ $precision == bfloat16 ]] && echo --bf16)
    for batch in "${infer_batches[@]}"; do
      measure "torch $precision infer $batch" "$py" bench/peers/torch_model.py --model="$model" \
        --mode=infer $flag --batch="$batch" --size="$size" --threads="$threads" \
        --warmup="$warmup" --steps="$steps"
    done
    ((train_batch > 0)) || continue
    measure "torch $precision train $train_batch" "$py" bench/peers/torch_model.py \
      --model="$model" --mode=train $flag --batch="$train_batch" --size="$size" \
      --threads="$threads" --warmup="$warmup" --steps="$steps"
  done
fi

if wanted "${peers[*]}" tensorflow && has tensorflow tensorflow; then
  echo "tensorflow $("$py" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null)"
  for precision in "${train_precisions[@]}"; do
    for batch in "${infer_batches[@]}"; do
      measure "tensorflow $precision infer $batch" "$py" bench/peers/tf_model.py --model="$model" \
        --mode=infer --precision=$precision --batch="$batch" --size="$size" --threads="$threads" \
        --warmup="$warmup" --steps="$steps"
    done
    ((train_batch > 0)) || continue
    measure "tensorflow $precision train $train_batch" "$py" bench/peers/tf_model.py \
      --model="$model" --mode=train --precision=$precision --batch="$train_batch" --size="$size" \
      --threads="$threads" --warmup="$warmup" --steps="$steps"
  done
fi

onnx=""
if wanted "${peers[*]}" onnxruntime || wanted "${peers[*]}" openvino; then onnx=$work/$model.onnx; fi
if [[ -n $py && -n $onnx ]] && ! "$bench" --model="$model" --mode=infer --batch=1 --size="$size" \
  --write_onnx="$onnx" >/dev/null 2>"$work/err"; then
  miss "onnxruntime, openvino: inception_bench --write_onnx failed: $(tail -n 1 "$work/err")"
  onnx=""
fi
if [[ -n $onnx ]] && wanted "${peers[*]}" onnxruntime && wanted "${precisions[*]}" float32 &&
  has onnxruntime onnxruntime; then
  echo "onnxruntime $("$py" -c 'import onnxruntime; print(onnxruntime.__version__)')"
  for batch in "${infer_batches[@]}"; do
    measure "onnxruntime float32 infer $batch" "$py" bench/peers/onnx_model.py \
      --onnx="$onnx" --runtime=onnxruntime --batch="$batch" --size="$size" --threads="$threads" \
      --warmup="$warmup" --steps="$steps"
  done
fi
if [[ -n $onnx ]] && wanted "${peers[*]}" openvino && has openvino openvino; then
  echo "openvino $("$py" -c 'import openvino; print(openvino.__version__)')"
  ov_precisions=(default)
  if wanted "${precisions[*]}" float32; then ov_precisions+=(float32); fi
  if wanted "${precisions[*]}" int8 && has nncf "openvino int8 (NNCF)"; then ov_precisions+=(int8); fi
  for precision in "${ov_precisions[@]}"; do
    for batch in "${infer_batches[@]}"; do
      measure "openvino $precision infer $batch" "$py" bench/peers/onnx_model.py \
        --onnx="$onnx" --runtime=openvino --precision=$precision --batch="$batch" \
        --size="$size" --threads="$threads" --warmup="$warmup" --steps="$steps"
    done
  done
fi

run_rounds

# spread "v1 v2 ...": "min median max" (the median of an even count: the mean of the middle two).
spread() {
  tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 }
    END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print v[1], m, v[NR] }'
}

echo "== $model: images/sec (min / median / max over $repeats), ours / peer (medians); ours:" \
  "GFLOP/s and GB/s at the median"
printf '%-12s %-9s %-6s %5s %10s %10s %10s   %s\n' who precision mode batch min median max \
  "ours/peer or GFLOP/s GB/s"
mapfile -t keys < <(printf '%s\n' "${!runs[@]}" | sort -k3,3 -k4,4n -k2,2 -k1,1)
for key in "${keys[@]}"; do
  read -r who precision mode batch <<<"$key"
  read -r lo mid hi <<<"$(spread "${runs[$key]}")"
  # OpenVINO's default precision is its choice for this CPU (bf16 where the CPU has bf16 dot
  # products, else f32): compared with ours in the same precision.
  ours_precision=$precision
  if [[ $precision == default ]]; then
    ours_precision=$([[ ${chosen[$key]:-} == bf16 ]] && echo bfloat16 || echo float32)
  fi
  ratio=""
  ours_key="ours $ours_precision $mode $batch"
  if [[ $who != ours && -n ${runs[$ours_key]:-} ]]; then
    read -r _ ours_mid _ <<<"$(spread "${runs[$ours_key]}")"
    ratio=$(awk -v o="$ours_mid" -v p="$mid" 'BEGIN { printf "%.2fx", o / p }')
    [[ $precision == default ]] && ratio+=" (vs ours $ours_precision: it chose ${chosen[$key]:-?})"
  fi
  if [[ $who == ours && -n ${per_image[$key]:-} ]]; then
    ratio=$(awk -v m="$mid" -v c="${per_image[$key]}" -v p="${peak_gflops[$precision]:-0}" \
      -v k="${peak_kernel[$precision]:-}" 'BEGIN { split(c, f, " ");
        printf "%.0f GFLOP/s %.1f GB/s", m * f[1], m * f[2]
        if (p > 0) printf " (%.0f%% of %s)", 100 * m * f[1] / p, k }')
  fi
  printf '%-12s %-9s %-6s %5s %10.2f %10.2f %10.2f   %s\n' "$who" "$precision" "$mode" "$batch" \
    "$lo" "$mid" "$hi" "$ratio"
done
# A target compares across precisions: our int8 against OpenVINO's own choice (bf16 on a CPU with
# bf16 dot products).
for batch in "${infer_batches[@]}"; do
  [[ -n ${runs["ours int8 infer $batch"]:-} && -n ${runs["openvino default infer $batch"]:-} ]] ||
    continue
  read -r _ ours_mid _ <<<"$(spread "${runs["ours int8 infer $batch"]}")"
  read -r _ peer_mid _ <<<"$(spread "${runs["openvino default infer $batch"]}")"
  echo "ours int8 / openvino default (${chosen["openvino default infer $batch"]:-?}) at batch $batch:" \
    "$(awk -v o="$ours_mid" -v p="$peer_mid" 'BEGIN { printf "%.2fx", o / p }')"
done
echo "ours int8: scales from one forward over random images (inception_bench): speed only."
echo "(N% of KERNEL): our GFLOP/s against the fastest peak kernel of that format (above); Winograd"
echo "layers count the direct convolution's multiply-adds, so they can pass 100%."
echo "bfloat16 on a CPU without bf16 dot products (no avx512_bf16 / amx_bf16 above) computes in f32;"
echo "without amx_bf16, our bf16 training keeps bf16 activations and computes its convolutions in f32."
if ((${#missing[@]})); then
  echo "== missing"
  printf '%s\n' "${missing[@]}"
fi
exit 0
