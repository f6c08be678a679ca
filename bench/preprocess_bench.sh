#!/bin/bash
# Decode + preprocess images/sec: ours (preprocess_bench) against torchvision on PIL over the same
# ImageNet-like JPEGs (~500x375, q90, made by our encoder), for training and eval preprocessing,
# with 1 and 2 threads, in the same run. Usage: bench/preprocess_bench.sh [build_dir] [images]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/machine.sh"
print_machine
BUILD=${1:-$ROOT/build}
IMAGES=${2:-200}
PASSES=${PASSES:-3}
DIR=$(mktemp -d /tmp/ic_preprocess_bench.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

if [ ! -f "$BUILD/build.ninja" ] && [ ! -f "$BUILD/Makefile" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIC_WITH_CUDA=OFF >/dev/null
fi
cmake --build "$BUILD" --target preprocess_bench -j2 >/dev/null
BENCH=$BUILD/bin/preprocess_bench
"$BENCH" --make="$IMAGES" --dir="$DIR"

# Columns: wall-clock images/sec, and images per CPU-second (per core; what the targets are
# stated in, and far less disturbed by other load on a shared machine).
printf '%-6s %-7s | %10s %10s %7s | %12s %12s %7s\n' mode threads "ours/s" "tv/s" ratio \
  "ours/cpu-s" "tv/cpu-s" ratio
for mode in train eval; do
  for threads in 1 2; do
    ours=$("$BENCH" --dir="$DIR" --mode=$mode --threads=$threads --passes="$PASSES")
    peer=$(/usr/bin/python3 "$ROOT/bench/preprocess_bench.py" --dir="$DIR" --mode=$mode \
             --threads=$threads --passes="$PASSES")
    field() { echo "$1" | awk -v k="$2" '$1 == k {print $2}'; }
    ow=$(field "$ours" images/sec); pw=$(field "$peer" images/sec)
    oc=$(field "$ours" images/cpu_sec); pc=$(field "$peer" images/cpu_sec)
    printf '%-6s %-7s | %10s %10s %6.2fx | %12s %12s %6.2fx\n' $mode $threads "$ow" "$pw" \
      "$(awk -v a="$ow" -v b="$pw" 'BEGIN {print a / b}')" "$oc" "$pc" \
      "$(awk -v a="$oc" -v b="$pc" 'BEGIN {print a / b}')"
  done
done
