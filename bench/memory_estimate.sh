#!/usr/bin/env bash
# Checks the trainer's start-up memory estimate ("Memory: about X of host memory at the peak")
# against the peak resident memory the kernel measured (GNU time's maxrss), for full-size
# Inception v3 at 299x299 on fake data, at two or more batch sizes. Fails when an estimate is
# more than 10% off.
#
#   bench/memory_estimate.sh [batch ...]      (default: 4 16; needs build/bin)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/machine.sh
print_machine
batches=("$@")
((${#batches[@]})) || batches=(4 16)
command -v /usr/bin/time >/dev/null || { echo "memory_estimate: needs GNU time (apt-get install time)" >&2; exit 1; }
status=0
for batch in "${batches[@]}"; do
  dir=$(mktemp -d)
  log=$(/usr/bin/time -f "maxrss_kib %M" build/bin/inception_v3 --use_data=fake --use_tpu=False \
    --mode=train --train_steps=2 --iterations=1 --train_batch_size="$batch" \
    --save_checkpoints_secs=0 --model_dir="$dir" 2>&1)
  rm -rf "$dir"
  estimate=$(sed -n 's/^Memory: about \([0-9.]*\) \(GiB\|MiB\) of host memory.*/\1 \2/p' <<<"$log")
  maxrss=$(sed -n 's/^maxrss_kib \([0-9]*\)/\1/p' <<<"$log")
  [[ -n $estimate && -n $maxrss ]] || { echo "batch $batch: no estimate or no maxrss in:"; echo "$log"; exit 1; }
  read -r value unit <<<"$estimate"
  awk -v b="$batch" -v v="$value" -v u="$unit" -v rss="$maxrss" 'BEGIN {
    est = v * (u == "GiB" ? 1024 : 1); got = rss / 1024; ratio = est / got
    printf "batch %3d: estimate %.0f MiB, peak resident %.0f MiB, estimate/peak %.3f %s\n",
           b, est, got, ratio, (ratio >= 0.9 && ratio <= 1.1) ? "ok" : "OFF BY MORE THAN 10%"
    exit !(ratio >= 0.9 && ratio <= 1.1) }' || status=1
done
exit $status
