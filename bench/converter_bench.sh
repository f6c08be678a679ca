#!/usr/bin/env bash
# Converter throughput: makes a raw tree of ~500 ImageNet-like JPEGs (500x375, quality 90,
# smooth gradients and blobs from make_fake_imagenet --raw_layout), converts it with
# imagenet_to_tfrecord and prints images/sec. The page cache is warm (the files were just
# written), so this measures decode + framing + writing, not a cold disk.
#   bench/converter_bench.sh [BUILD_DIR] [NUM_THREADS]
set -euo pipefail
source "$(dirname "$0")/machine.sh"
print_machine
build=${1:-build}
threads=${2:-$(nproc)}
bin="$build/bin"
for tool in make_fake_imagenet imagenet_to_tfrecord; do
  [[ -x "$bin/$tool" ]] || { echo "missing $bin/$tool (cmake --build $build --target $tool)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin/make_fake_imagenet" --raw_layout --output_dir="$work/raw" --num_train_images=450 \
  --num_validation_images=50 --image_size=375 --image_width=500 --num_classes=10 \
  --jpeg_quality=90 --num_threads="$threads" 2>/dev/null
bytes=$(du -sb "$work/raw" | cut -f1)
echo "raw tree: 500 JPEGs 500x375, $((bytes / 500 / 1024)) KiB per image on average"

for pass in 1 2; do
  rm -rf "$work/out"
  start=$(date +%s.%N)
  "$bin/imagenet_to_tfrecord" --raw_data_dir="$work/raw" --local_scratch_dir="$work/out" \
    --train_shards=16 --validation_shards=2 --num_threads="$threads" 2>/dev/null >"$work/summary"
  end=$(date +%s.%N)
  rate=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", 500 / (e - s) }')
  echo "pass $pass: $(tail -1 "$work/summary"); wall clock incl. listing: $rate images/sec" \
    "($threads threads)"
done
