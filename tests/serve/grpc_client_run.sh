#!/usr/bin/env bash
# serve's gRPC front end through TensorFlow Serving's own Python client (scripts/test.sh runs it
# after tests/interop/run.sh; it needs build/bin): trains a tiny model, starts the real `serve`
# on free loopback ports (gRPC and REST), and runs grpc_client_test.py against both. Python is
# the interop environment (tests/interop/requirements.txt: tensorflow-cpu, grpcio, protobuf,
# pinned) with tensorflow-serving-api (grpc_client_requirements.txt, pinned) installed next to
# it with --no-deps, since it asks for `tensorflow` and the environment has tensorflow-cpu;
# both are cached under ${XDG_CACHE_HOME:-~/.cache}/inception.cpp/. Anything that cannot be
# installed or run fails the script; nothing is skipped.
#   usage: tests/serve/grpc_client_run.sh   (IC_BIN_DIR=... for another build's bin directory)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/serve
bin=${IC_BIN_DIR:-$root/build/bin}

say() { echo "grpc client: $*"; }
die() {
  echo "grpc client: FAILED: $*" >&2
  exit 1
}

for tool in inception_v3 serve; do
  [[ -x $bin/$tool ]] || die "$bin/$tool is not built (cmake --build build first)"
done

source "$root/scripts/python_venv.sh"
venv=$(cached_venv interop "$root/tests/interop/requirements.txt" "import numpy, tensorflow, grpc") ||
  die "no Python environment"
key=$({
  echo "$venv"
  cat "$here/grpc_client_requirements.txt"
} | sha256sum | cut -c1-16)
packages=${XDG_CACHE_HOME:-$HOME/.cache}/inception.cpp/grpc-client-packages-$key
if [[ ! -f $packages/.complete ]]; then
  say "installing $here/grpc_client_requirements.txt into $packages (PyPI, once)"
  rm -rf "$packages"
  "$venv/bin/pip" install --disable-pip-version-check --no-input -q --no-deps \
    --target "$packages" -r "$here/grpc_client_requirements.txt" ||
    die "cannot install the pinned packages of $here/grpc_client_requirements.txt"
  touch "$packages/.complete"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ic_grpc_client.XXXXXX")
serve_pid=
cleanup() {
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

say "training a tiny model"
"$bin/inception_v3" --mode=train --use_data=fake --use_tpu=False --num_threads=1 --iterations=2 \
  --train_batch_size=2 --width=75 --height=75 --depth_multiplier=0.1 --num_classes=11 \
  --save_checkpoints_secs=0 --train_steps=2 --model_dir="$work/model" >"$work/train.log" 2>&1 ||
  die "training failed (see $work/train.log)"

# 4 MiB: a batch of 64 float images of 75x75 is over it.
"$bin/serve" --model_dir="$work/model" --port=0 --rest_api_port=-1 --num_threads=1 \
  --grpc_max_message_bytes=4194304 --poll_interval_ms=0 2>"$work/serve.log" &
serve_pid=$!
grpc_port= rest_port=
for _ in $(seq 600); do
  grpc_port=$(sed -n 's/^serve: gRPC listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log")
  rest_port=$(sed -n 's|^serve: listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/serve.log")
  [[ -n $grpc_port && -n $rest_port ]] && break
  kill -0 "$serve_pid" 2>/dev/null || die "serve exited: $(cat "$work/serve.log")"
  sleep 0.1
done
[[ -n $grpc_port && -n $rest_port ]] || die "serve did not start: $(cat "$work/serve.log")"
say "serve: gRPC on $grpc_port, REST on $rest_port"

PYTHONPATH=$packages "$venv/bin/python" "$here/grpc_client_test.py" "$grpc_port" "$rest_port" \
  inception_v3 "$work/model" || die "the client checks failed (serve's log: $work/serve.log)"

kill -TERM "$serve_pid"
wait "$serve_pid" || die "serve did not exit 0 on SIGTERM: $(cat "$work/serve.log")"
serve_pid=
say "passed"
