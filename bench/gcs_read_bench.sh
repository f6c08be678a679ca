#!/bin/bash
# TFRecord read throughput from a Cloud Storage emulator on loopback against local disk, on the
# same shards: raw record reading (MB/s, through TfRecordReader's 8 MiB range requests, each fetched while the previous is read) and
# one eval epoch through the input pipeline (decode + preprocess, images/s). The emulator is
# the venv tests/storage/run.sh makes (made here too if missing).
#   usage: bench/gcs_read_bench.sh [build_dir] [images] [threads]
# Note: the emulator is a single Python process, so its figures are a floor for what the
# client sustains; it also competes with the pipeline for the same cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/machine.sh"
print_machine
BUILD=${1:-$ROOT/build}
IMAGES=${2:-512}
THREADS=${3:-2}
python=${PYTHON:-python3}
DIR=$(mktemp -d /tmp/ic_gcs_bench.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT

cmake --build "$BUILD" --target gcs_read_bench make_fake_imagenet -j2 >/dev/null
source "$ROOT/scripts/python_venv.sh"
venv=$(cached_venv storage "$ROOT/tests/storage/requirements.txt" "import gcp_storage_emulator") || exit 1
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$venv/bin/gcp-storage-emulator" start --host=127.0.0.1 --port="$port" --in-memory \
  --default-bucket=bench --quiet >"$DIR/emulator.log" 2>&1 &
pids+=($!)
export STORAGE_EMULATOR_HOST=http://127.0.0.1:$port
for _ in $(seq 100); do curl -sf -o /dev/null "$STORAGE_EMULATOR_HOST/storage/v1/b/bench" && break; sleep 0.1; done

shards=(--num_train_images=8 --num_validation_images="$IMAGES" --train_shards=1
        --validation_shards=4 --image_size=299 --image_width=400 --num_classes=1000 --seed=1)
"$BUILD/bin/make_fake_imagenet" --output_dir="$DIR/data" "${shards[@]}" >/dev/null
"$BUILD/bin/make_fake_imagenet" --output_dir=gs://bench/data "${shards[@]}" >/dev/null

B=$BUILD/bin/gcs_read_bench
field() { echo "$1" | awk -v k="$2" '$1 == k {print $2}'; }
printf '%-8s | %12s %12s | %14s\n' source "records MB/s" "records/s" "pipeline img/s"
for source in local gcs; do
  dir=$DIR/data
  [[ $source == gcs ]] && dir=gs://bench/data
  records=$("$B" --data_dir="$dir" --what=records)
  pipeline=$("$B" --data_dir="$dir" --what=pipeline --threads="$THREADS")
  printf '%-8s | %12s %12s | %14s\n' $source "$(field "$records" MB/sec)" \
    "$(field "$records" records/sec)" "$(field "$pipeline" images/sec)"
done
