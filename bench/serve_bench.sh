#!/usr/bin/env bash
# serve under load: Inception v3 at 299x299 (a full-size checkpoint made in one cheap training
# step on fake data; its weights do not matter for speed) answering wrk, which posts one real
# JPEG per request in TF Serving's body, and bench/grpc_load.cc, which sends the same JPEG as
# TF Serving's gRPC clients do (Predict, classify signature, image_bytes). serve runs in its default precision, auto (PRECISION=
# float32|bfloat16 asks for one); the offline figures are taken at the precision it chose,
# which it reports at /healthz. Measured in the same run:
#   1. offline inference throughput, inception_bench --mode=infer at the same batch size, and
#      its batch-1 latency
#   2. serve's throughput at saturation (2 x batch connections) and its ratio to 1, REST then
#      gRPC
#   3. p50 / p99 latency at about half that load (wrk 4 has no fixed request rate: fewer
#      connections, batch / 2, give roughly half the load; the achieved rate is printed), REST
#      then gRPC
#   4. single-request latency (one connection), REST then gRPC, its ratio to the offline
#      batch-1 latency, where
#      the time went inside serve (its per-stage means from /metrics), and the classify program
#      on one image (the whole process: it must load the checkpoint first, as any one-shot tool
#      does)
#
#   bench/serve_bench.sh [build_dir] [batch] [threads] [seconds]
#   env: PRECISION=auto BATCH_TIMEOUT_MICROS=2000 SERVE_FLAGS= (more serve flags, e.g.
#        --batch_wait_when_idle=true for TF Serving's batching wait) SKIP_BUILD=1 PORT=18599
# Heavy: run it on an otherwise idle machine (it prints `uptime` first).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
batch=${2:-8}
threads=${3:-2}
seconds=${4:-30}
port=${PORT:-18599}
grpc_port=$((port + 1))
source bench/machine.sh
print_machine
[[ ${SKIP_BUILD:-0} == 1 ]] ||
  cmake --build "$build" --target serve grpc_load inception_bench inception_v3 classify make_fake_imagenet >/dev/null
command -v wrk >/dev/null || { echo "serve_bench: needs wrk (apt-get install wrk)"; exit 1; }
bin="$build/bin"
work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== a full-size Inception v3 checkpoint (one training step, batch 2, fake data)"
"$bin/inception_v3" --mode=train --use_data=fake --use_tpu=False --iterations=1 --train_steps=1 \
  --train_batch_size=2 --save_checkpoints_secs=0 --num_threads="$threads" \
  --model_dir="$work/model" >"$work/train.log" 2>&1
echo "== a real JPEG (make_fake_imagenet's, 500x375)"
"$bin/make_fake_imagenet" --raw_layout --output_dir="$work/images" --num_train_images=1 \
  --num_validation_images=1 --num_classes=1 --image_size=375 --image_width=500 >/dev/null
jpeg=$(find "$work/images/validation" -name '*.JPEG' | head -1)
ls -l "$jpeg"
printf '{"instances": [{"b64": "%s"}]}' "$(base64 -w0 "$jpeg")" >"$work/body.json"
export BODY="$work/body.json"

"$bin/serve" --model_dir="$work/model" --port="$grpc_port" --rest_api_port="$port" --num_threads="$threads" \
  --precision="${PRECISION:-auto}" \
  --max_batch_size="$batch" --batch_timeout_micros="${BATCH_TIMEOUT_MICROS:-2000}" \
  ${SERVE_FLAGS:-} \
  2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
cat "$work/serve.log"
precision=$(curl -s "http://127.0.0.1:$port/healthz" | grep -o '"precision":"[a-z0-9]*"' | cut -d'"' -f4)
echo "serve computes in: $precision"

offline() {  # batch -> images/sec
  OMP_NUM_THREADS=$threads "$bin/inception_bench" --mode=infer --model=inception_v3 \
    --batch="$1" --size=299 --threads="$threads" --warmup=2 --steps=5 --precision="$precision" |
    tail -1
}
echo "== 1. offline ($precision, serve idle): inception_bench --mode=infer --batch=$batch and 1 --threads=$threads"
offline_line=$(offline "$batch")
echo "$offline_line"
offline_ips=$(grep -o 'images_per_sec=[0-9.]*' <<<"$offline_line" | cut -d= -f2)
offline1_line=$(offline 1)
echo "$offline1_line"
offline1_ms=$(grep -o 'images_per_sec=[0-9.]*' <<<"$offline1_line" | cut -d= -f2 |
  awk '{ printf "%.1f", 1000 / $1 }')
echo "offline batch-1 latency: $offline1_ms ms"

url="http://127.0.0.1:$port/v1/models/inception_v3:predict"
curl -sf -X POST "$url" -d @"$work/body.json" >/dev/null  # warm-up
run_wrk() {  # connections
  wrk -t1 -c"$1" -d"${seconds}s" --timeout 60s -s bench/serve_post.lua "$url" | grep '^RESULT'
}
run_grpc() {  # connections
  "$bin/grpc_load" --port="$grpc_port" --image="$jpeg" --connections="$1" --seconds="$seconds" |
    grep '^RESULT'
}

echo "== 2. saturation: $((2 * batch)) connections for ${seconds}s"
saturated=$(run_wrk $((2 * batch)))
echo "$saturated"
rps=$(grep -o 'rps=[0-9.]*' <<<"$saturated" | cut -d= -f2)
echo "serve / offline throughput ($precision): $(awk -v a="$rps" -v b="$offline_ips" 'BEGIN { printf "%.2f", a / b }')"
echo "   gRPC, $((2 * batch)) connections for ${seconds}s"
grpc_saturated=$(run_grpc $((2 * batch)))
echo "$grpc_saturated"
grpc_rps=$(grep -o 'rps=[0-9.]*' <<<"$grpc_saturated" | cut -d= -f2)
echo "serve gRPC / offline throughput ($precision): $(awk -v a="$grpc_rps" -v b="$offline_ips" 'BEGIN { printf "%.2f", a / b }')"

half=$(( batch / 2 > 0 ? batch / 2 : 1 ))
echo "== 3. about half load: $half connections for ${seconds}s"
run_wrk "$half"
echo "   gRPC, $half connections"
run_grpc "$half"

echo "== 4. single request: 1 connection for ${seconds}s, and classify on the same JPEG"
curl -s "http://127.0.0.1:$port/metrics" >"$work/metrics.before"
single=$(run_wrk 1)
echo "$single"
p50=$(grep -o 'p50_ms=[0-9.]*' <<<"$single" | cut -d= -f2)
echo "single-request p50 / offline batch-1 latency ($precision): $(awk -v a="$p50" -v b="$offline1_ms" 'BEGIN { printf "%.2f", a / b }')"
curl -s "http://127.0.0.1:$port/metrics" >"$work/metrics.after"
# serve_stage_seconds{stage=...}: the mean of each stage over the single-connection run.
awk '/^serve_stage_seconds_(sum|count)/ { key = $1; sub(/_(sum|count)\{/, "{", key)
       if ($1 ~ /_sum/) sum[key] += (FILENAME ~ /after/ ? $2 : -$2)
       else count[key] += (FILENAME ~ /after/ ? $2 : -$2) }
     END { for (k in sum) if (count[k] > 0) printf "  %-50s %8.2f ms\n", k, 1000 * sum[k] / count[k] }' \
  "$work/metrics.before" "$work/metrics.after" | sort
echo "   gRPC, 1 connection"
grpc_single=$(run_grpc 1)
echo "$grpc_single"
grpc_p50=$(grep -o 'p50_ms=[0-9.]*' <<<"$grpc_single" | cut -d= -f2)
echo "gRPC single-request p50 / offline batch-1 latency ($precision): $(awk -v a="$grpc_p50" -v b="$offline1_ms" 'BEGIN { printf "%.2f", a / b }')"
# What the server answered over the whole run (a wrk "error" may be a non-200 status or a
# socket closed by wrk itself when its time is up; the server's own counts tell them apart).
curl -s "http://127.0.0.1:$port/metrics" |
  grep -E '^serve_(batch_size_(sum|count)|images_total|requests_total)'
start=$(date +%s.%N)
OMP_NUM_THREADS=$threads "$bin/classify" --model_dir="$work/model" --num_threads="$threads" "$jpeg" >/dev/null
end=$(date +%s.%N)
echo "classify, one image, whole process (loads the checkpoint too): $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f ms", (b - a) * 1000 }')"
