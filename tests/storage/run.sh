#!/usr/bin/env bash
# gs:// end to end against a real Cloud Storage emulator (scripts/test.sh runs it after the
# Release tests; it needs build/bin). gcp-storage-emulator from PyPI runs on a free loopback
# port in a virtual environment made once from the pinned requirements.txt (cached under
# ${XDG_CACHE_HOME:-~/.cache}/inception.cpp/), and STORAGE_EMULATOR_HOST points the programs at
# it, as it does Google's own clients. The same steps run on local paths, and the results must
# be equal:
#   1. make_fake_imagenet and imagenet_to_tfrecord write their shards to gs:// (byte-equal to
#      the local ones; --resume finds them there)
#   2. inception_v3 --mode=train_and_eval reads them from gs:// and writes checkpoints and
#      events to a gs:// model_dir, while a --mode=eval process follows that model_dir
#   3. a restart resumes from the gs:// checkpoint; the final checkpoint's tensors equal the
#      local run's, bit for bit
#   4. classify reads the model and an image from gs://; its logits equal the local ones
#   5. export_model writes a SavedModel and a safetensors export to a gs:// export_dir;
#      classify on that export base dir gives the local logits; serve --model_dir=gs://...
#      answers a predict (curl) with the export's number as its version
#   6. through tests/storage/fault_proxy.py (503s, dropped connections, stalls): retries
#      recover and training gives the same tensors; a failure that outlasts the retries is an
#      error naming the gs:// object; the `checkpoint` object then names only complete saves,
#      and a failed export deletes the objects it uploaded
#   7. a trainer killed (SIGKILL) in mid-save leaves only complete checkpoints listed, and a
#      restart resumes from the newest
#   8. export_model killed (SIGKILL) at random moments while it writes to gs:// never leaves
#      a version that classify (serve's rule, the newest servable) would pick half-written
#   9. sweep --sweep_dir=gs://...: the variants' runs, logs, result and HParams event files,
#      leaderboard.csv (the local sweep's scores) and the winner in serving/ are objects;
#      classify serves the winner from there; run again, the sweep retrains nothing; under
#      mpirun with --groups=2, the same leaderboard and the logs in the bucket
#  10. the model zoo (MobileNet v1/v2, DenseNet-121, SqueezeNet 1.0/1.1, EfficientNet-B0):
#      each program trains from the gs:// shards to a gs:// model_dir and exports its
#      SavedModel to gs://; classify on that export gives the checkpoint's logits, and one
#      serve --model_config_file=... with the six gs:// base paths answers a predict for each
#      model by name, with the export's number as its version
# Anything that cannot be installed or run fails the script; nothing is skipped.
#   usage: tests/storage/run.sh            (IC_BIN_DIR=... for another build's bin directory)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/storage
bin=${IC_BIN_DIR:-$root/build/bin}
python=${PYTHON:-python3}
# Steps 4 and 5 compare classify's logits bit for bit across runs. Timing each convolution
# at compile time may pick a different (equally right) implementation in each process, whose
# float sums round differently, so the fixed choice is kept here.
export IC_CONV_TIMING=0

say() { echo "storage: $*"; }
die() {
  echo "storage: FAILED: $*" >&2
  exit 1
}

for tool in inception_v3 make_fake_imagenet classify inspect_checkpoint export_model serve sweep; do
  [[ -x $bin/$tool ]] || die "$bin/$tool is not built (cmake --build build first)"
done
command -v "$python" >/dev/null || die "$python not found"
command -v curl >/dev/null || die "curl not found (Debian: apt-get install curl)"
command -v mpirun >/dev/null || die "mpirun not found (scripts/install-deps.sh installs Open MPI)"

source "$root/scripts/python_venv.sh"
venv=$(cached_venv storage "$here/requirements.txt" \
  "import shutil, sys; sys.exit(shutil.which('gcp-storage-emulator', path=sys.prefix + '/bin') is None)") ||
  die "no Python environment with gcp-storage-emulator"

work=$(mktemp -d)
[[ -n ${KEEP_WORK:-} ]] && say "keeping $work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() {  # url [tries of 0.1 s]
  for _ in $(seq "${2:-100}"); do
    curl -sf -o /dev/null "$1" && return 0
    sleep 0.1
  done
  return 1
}

bucket=ic-test
emulator_port=$(free_port)
"$venv/bin/gcp-storage-emulator" start --host=127.0.0.1 --port="$emulator_port" --in-memory \
  --default-bucket="$bucket" --quiet >"$work/emulator.log" 2>&1 &
pids+=($!)
emulator=http://127.0.0.1:$emulator_port
wait_for "$emulator/storage/v1/b/$bucket" || {
  cat "$work/emulator.log" >&2
  die "the emulator did not start on $emulator"
}
export STORAGE_EMULATOR_HOST=$emulator
unset GOOGLE_APPLICATION_CREDENTIALS
say "emulator on $emulator, bucket gs://$bucket"

run() {  # name command...: output in $work/<name>.log, shown if it fails
  local name=$1
  shift
  local rc=0 start=$SECONDS
  "$@" >"$work/$name.log" 2>&1 || rc=$?
  [[ -n ${VERBOSE:-} ]] && say "  $name: $((SECONDS - start)) s"
  if ((rc != 0)); then
    cat "$work/$name.log" >&2
    die "$name: $* exited with $rc"
  fi
}
download() {  # object destination
  curl -sf -o "$2" "$STORAGE_EMULATOR_HOST/storage/v1/b/$bucket/o/$("$python" -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1")?alt=media"
}
objects() {  # prefix: the object names under it
  curl -sf "$STORAGE_EMULATOR_HOST/storage/v1/b/$bucket/o?prefix=$1" |
    "$python" -c 'import json,sys; [print(i["name"]) for i in json.load(sys.stdin).get("items", [])]'
}
same_checkpoint() {  # checkpoint-a checkpoint-b what
  run inspect_a "$bin/inspect_checkpoint" --file_name="$1" --write_safetensors="$work/a.safetensors"
  run inspect_b "$bin/inspect_checkpoint" --file_name="$2" --write_safetensors="$work/b.safetensors"
  "$python" "$here/same_tensors.py" "$work/a.safetensors" "$work/b.safetensors" ||
    die "$3: $1 and $2 differ"
}

data_flags=(--num_train_images=48 --num_validation_images=8 --train_shards=3 --validation_shards=1
            --image_size=80 --num_classes=10 --seed=5 --num_threads=2)
tiny=(--use_tpu=False --num_threads=1 --iterations=2 --train_batch_size=2 --eval_batch_size=2
      --width=75 --height=75 --depth_multiplier=0.1 --num_classes=11 --save_checkpoints_secs=0
      --num_parallel_calls=1 --seed=3 --train_steps_per_eval=2 --eval_total_size=8)
gs=gs://$bucket

say "1/10: the converter's shards go to gs://"
run data_local "$bin/make_fake_imagenet" --output_dir="$work/data" "${data_flags[@]}"
run data_gs "$bin/make_fake_imagenet" --output_dir="$gs/data" "${data_flags[@]}"
for f in train-00000-of-00003 train-00002-of-00003 validation-00000-of-00001; do
  download "data/$f" "$work/$f.from_gs" || die "gs://$bucket/data/$f was not written"
  cmp -s "$work/data/$f" "$work/$f.from_gs" || die "gs://$bucket/data/$f differs from the local shard"
done
# The ImageNet converter too, from a local raw tree (and --resume skips what the bucket has).
run raw_tree "$bin/make_fake_imagenet" --output_dir="$work/raw_tree" --raw_layout \
  --num_train_images=12 --num_validation_images=4 --image_size=64 --num_classes=3 --seed=2
convert=(--raw_data_dir="$work/raw_tree" --train_shards=2 --validation_shards=1 --num_threads=2)
run convert_local "$bin/imagenet_to_tfrecord" "${convert[@]}" --local_scratch_dir="$work/converted"
run convert_gs "$bin/imagenet_to_tfrecord" "${convert[@]}" --local_scratch_dir="$gs/converted"
for f in train-00000-of-00002 train-00001-of-00002 validation-00000-of-00001; do
  download "converted/$f" "$work/$f.converted" || die "gs://$bucket/converted/$f was not written"
  cmp -s "$work/converted/$f" "$work/$f.converted" ||
    die "gs://$bucket/converted/$f differs from the local shard"
done
run convert_resume "$bin/imagenet_to_tfrecord" "${convert[@]}" --local_scratch_dir="$gs/converted" \
  --resume
grep -q "resumed" "$work/convert_resume.log" || die "--resume did not find the shards in the bucket"

say "2/10: train_and_eval from and to gs://, with an eval process following the model_dir"
"$bin/inception_v3" --mode=eval --data_dir="$gs/data" --model_dir="$gs/model" "${tiny[@]}" \
  --train_steps=6 --eval_timeout=300 >"$work/follow.log" 2>&1 &
follower=$!
pids+=($follower)
run train_gs "$bin/inception_v3" --mode=train_and_eval --data_dir="$gs/data" \
  --model_dir="$gs/model" "${tiny[@]}" --train_steps=4
run train_local "$bin/inception_v3" --mode=train_and_eval --data_dir="$work/data" \
  --model_dir="$work/model" "${tiny[@]}" --train_steps=4
objects model/ >"$work/model_objects.txt"
for name in checkpoint model.ckpt-4.index model.ckpt-4.data-00000-of-00001; do
  grep -qx "model/$name" "$work/model_objects.txt" || die "gs://$bucket/model/$name is missing"
done
grep -q '^model/events.out.tfevents' "$work/model_objects.txt" || die "no training event file in gs://$bucket/model"
grep -q '^model/eval/events.out.tfevents' "$work/model_objects.txt" || die "no eval event file in gs://$bucket/model/eval"
same_checkpoint "$gs/model/model.ckpt-4" "$work/model/model.ckpt-4" "after 4 steps"

say "3/10: a restart resumes from the gs:// checkpoint"
run resume_gs "$bin/inception_v3" --mode=train_and_eval --data_dir="$gs/data" \
  --model_dir="$gs/model" "${tiny[@]}" --train_steps=6
grep -qF "Restoring parameters from $gs/model/model.ckpt-4 (global step 4)" "$work/resume_gs.log" || {
  cat "$work/resume_gs.log" >&2
  die "the restart did not resume from $gs/model/model.ckpt-4"
}
run resume_local "$bin/inception_v3" --mode=train_and_eval --data_dir="$work/data" \
  --model_dir="$work/model" "${tiny[@]}" --train_steps=6
same_checkpoint "$gs/model/model.ckpt-6" "$work/model/model.ckpt-6" "after resuming to step 6"
wait "$follower" || {
  cat "$work/follow.log" >&2
  die "--mode=eval following $gs/model failed"
}
grep -qF "Evaluation finished after training step 6" "$work/follow.log" || {
  cat "$work/follow.log" >&2
  die "--mode=eval did not follow $gs/model to step 6"
}

say "4/10: classify reads the model and an image from gs://"
run raw "$bin/make_fake_imagenet" --output_dir="$work/raw" --raw_layout --num_train_images=2 \
  --num_validation_images=1 --image_size=80 --num_classes=10 --seed=5
image=$(find "$work/raw" -name '*.JPEG' | sort | head -1)
[[ -n $image ]] || die "make_fake_imagenet --raw_layout wrote no JPEG"
curl -sf -X POST --data-binary @"$image" -H "Content-Type: image/jpeg" \
  "$STORAGE_EMULATOR_HOST/upload/storage/v1/b/$bucket/o?uploadType=media&name=images%2Fcat.JPEG" \
  >/dev/null || die "cannot upload a test image to the emulator"
run classify_gs "$bin/classify" --model_dir="$gs/model" --num_threads=1 \
  --logits_out="$work/gs.npy" "$gs/images/cat.JPEG"
run classify_local "$bin/classify" --model_dir="$work/model" --num_threads=1 \
  --logits_out="$work/local.npy" "$image"
cmp -s "$work/gs.npy" "$work/local.npy" || die "classify's logits differ between gs:// and local"

say "5/10: exports to a gs:// export_dir; classify and serve read them from there"
run export_saved_model_gs "$bin/export_model" --model_dir="$gs/model" --export_dir="$gs/exports"
run export_safetensors_gs "$bin/export_model" --model_dir="$gs/model" --export_dir="$gs/exports" \
  --format=safetensors
objects exports/ >"$work/export_objects.txt"
saved_version=$(sed -n 's|^exports/\([0-9]*\)/saved_model.pb$|\1|p' "$work/export_objects.txt")
[[ -n $saved_version ]] || die "no exports/<N>/saved_model.pb in gs://$bucket: $(cat "$work/export_objects.txt")"
for name in variables/variables.index variables/variables.data-00000-of-00001; do
  grep -qx "exports/$saved_version/$name" "$work/export_objects.txt" ||
    die "gs://$bucket/exports/$saved_version/$name is missing"
done
export_version=$(sed -n 's|^exports/\([0-9]*\)/model.safetensors$|\1|p' "$work/export_objects.txt")
[[ -n $export_version ]] || die "no exports/<N>/model.safetensors in gs://$bucket"
# The export base dir itself: its newest model.safetensors, the checkpoint's EMA weights.
run classify_export_gs "$bin/classify" --model_dir="$gs/exports" --num_threads=1 \
  --logits_out="$work/export_gs.npy" "$gs/images/cat.JPEG"
grep -qF "$gs/exports/$export_version/model.safetensors" "$work/classify_export_gs.log" ||
  die "classify did not read gs://$bucket/exports/$export_version/model.safetensors"
cmp -s "$work/export_gs.npy" "$work/local.npy" ||
  die "classify's logits from the gs:// export differ from the local checkpoint's"
serve_port=$(free_port)
"$bin/serve" --model_dir="$gs/exports" --port=0 --rest_api_port="$serve_port" --num_threads=1 \
  --poll_interval_ms=0 >"$work/serve.log" 2>&1 &
server=$!
pids+=($server)
wait_for "http://127.0.0.1:$serve_port/healthz" 300 || {
  cat "$work/serve.log" >&2
  die "serve --model_dir=$gs/exports did not start serving"
}
printf '{"instances": [{"b64": "%s"}]}' "$(base64 -w0 "$image")" >"$work/predict.json"
curl -sf -X POST --data-binary @"$work/predict.json" \
  "http://127.0.0.1:$serve_port/v1/models/inception_v3/versions/$export_version:predict" \
  >"$work/predicted.json" || die "serve from gs:// did not answer the predict of version $export_version"
grep -q '"predictions"' "$work/predicted.json" || die "serve's answer has no predictions: $(cat "$work/predicted.json")"
kill "$server"
wait "$server" || die "serve did not exit 0 on SIGTERM: $(tail -3 "$work/serve.log")"

say "6/10: faults between the programs and the emulator"
proxy_port=$(free_port)
rules=$work/rules.json
echo '[]' >"$rules"
"$venv/bin/python" "$here/fault_proxy.py" --port="$proxy_port" --upstream="127.0.0.1:$emulator_port" \
  --rules="$rules" --log="$work/proxy.log" >"$work/proxy.out" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$proxy_port/storage/v1/b/$bucket" || die "the fault proxy did not start"
export STORAGE_EMULATOR_HOST=http://127.0.0.1:$proxy_port
export IC_STORAGE_RETRY_DELAY_MS=20 IC_STORAGE_TIMEOUT_S=3
cat >"$rules" <<'JSON'
[{"match": "alt=media", "action": "stall", "seconds": 6, "first": 1},
 {"match": "PUT", "action": "stall", "seconds": 5, "first": 1},
 {"match": "PUT", "action": "reset", "every": 4},
 {"match": "GET", "action": "reset", "every": 5},
 {"match": "POST", "action": "503", "every": 3},
 {"match": "", "action": "503", "every": 4}]
JSON
# 256 KiB upload chunks: every checkpoint data object goes up as a resumable upload.
IC_STORAGE_UPLOAD_CHUNK_BYTES=262144 run train_faults "$bin/inception_v3" --mode=train_and_eval --data_dir="$gs/data" \
  --model_dir="$gs/model_faults" "${tiny[@]}" --train_steps=4
for fault in stall reset 503; do
  grep -q " $fault\$" "$work/proxy.log" || die "the proxy injected no '$fault' (rules not exercised)"
done
grep -q "retrying" "$work/train_faults.log" || die "the trainer logged no retry"
grep -q "^PUT .*upload_id=.* reset\$" "$work/proxy.log" || die "no resumable upload chunk was dropped"
same_checkpoint "$gs/model_faults/model.ckpt-4" "$work/model/model.ckpt-4" "training through faults"

# A complete save at step 2, then every upload of the step-4 save fails, more times than the
# retries allow.
echo '[]' >"$rules"
run train_to_2 "$bin/inception_v3" --mode=train --data_dir="$gs/data" --model_dir="$gs/model_fail" \
  "${tiny[@]}" --train_steps=2
echo '[{"match": "model.ckpt-4", "action": "503"}]' >"$rules"
rc=0
IC_STORAGE_RETRIES=3 "$bin/inception_v3" --mode=train --data_dir="$gs/data" \
  --model_dir="$gs/model_fail" "${tiny[@]}" --train_steps=4 >"$work/train_fail.log" 2>&1 || rc=$?
((rc != 0)) || die "training went on although every upload of model.ckpt-4 failed"
cat "$work/train_fail.log" | grep -v "retrying" | tail -3
grep -qF "gs://$bucket/model_fail/model.ckpt-4" "$work/train_fail.log" || {
  cat "$work/train_fail.log" >&2
  die "the error does not name the object that could not be written"
}
# An export whose saved_model.pb cannot be uploaded fails naming it and deletes what it
# uploaded under its number: no half export is left for a poller.
echo '[{"match": "saved_model.pb", "action": "503"}]' >"$rules"
rc=0
IC_STORAGE_RETRIES=1 "$bin/export_model" --model_dir="$gs/model" --export_dir="$gs/exports_fail" \
  >"$work/export_fail.log" 2>&1 || rc=$?
((rc != 0)) || die "export_model succeeded although saved_model.pb could not be uploaded"
grep -qF "gs://$bucket/exports_fail/" "$work/export_fail.log" || {
  cat "$work/export_fail.log" >&2
  die "the failed export's error does not name the object"
}
echo '[]' >"$rules"
[[ -z $(objects exports_fail/) ]] || die "a failed export left objects: $(objects exports_fail/)"
download model_fail/checkpoint "$work/fail_checkpoint" || die "no checkpoint object in gs://$bucket/model_fail"
grep -q 'model.ckpt-4' "$work/fail_checkpoint" && die "the checkpoint object names the failed save"
listed=$(sed -n 's/^all_model_checkpoint_paths: "\(.*\)"$/\1/p' "$work/fail_checkpoint")
[[ -n $listed ]] || die "the checkpoint object lists no checkpoint"
for name in $listed; do
  run "inspect_$name" "$bin/inspect_checkpoint" --file_name="$gs/model_fail/$name" ||
    die "$name, named by the checkpoint object, is not complete"
done

say "7/10: a trainer killed (SIGKILL) while it saves to gs:// leaves only complete checkpoints"
export STORAGE_EMULATOR_HOST=$emulator
unset IC_STORAGE_RETRY_DELAY_MS IC_STORAGE_TIMEOUT_S
for round in 1 2 3; do
  "$bin/inception_v3" --mode=train --data_dir="$gs/data" --model_dir="$gs/model_kill" "${tiny[@]}" \
    --train_steps=100000 --save_checkpoints_secs=1 >"$work/kill_$round.log" 2>&1 &
  victim=$!
  # Until a save of this round has started and some save's `checkpoint` object exists (the
  # first round's first save may still be uploading), then a little longer: the kill lands in
  # mid-run, often inside an upload. From then on a missing `checkpoint` object is a failure.
  for _ in $(seq 600); do
    grep -qs "^Saving checkpoints" "$work/kill_$round.log" &&
      download model_kill/checkpoint "$work/kill_checkpoint" && break
    sleep 0.1
  done
  sleep "0.$((RANDOM % 10))"
  kill -9 "$victim" 2>/dev/null || true
  wait "$victim" 2>/dev/null || true
  download model_kill/checkpoint "$work/kill_checkpoint" || die "round $round: no checkpoint object"
  for name in $(sed -n 's/^all_model_checkpoint_paths: "\(.*\)"$/\1/p' "$work/kill_checkpoint"); do
    run "kill_inspect_$name" "$bin/inspect_checkpoint" --file_name="$gs/model_kill/$name"
  done
done
latest=$(sed -n 's/^model_checkpoint_path: "model.ckpt-\(.*\)"$/\1/p' "$work/kill_checkpoint")
[[ -n $latest ]] || die "no latest checkpoint after the kills"
run kill_resume "$bin/inception_v3" --mode=train --data_dir="$gs/data" --model_dir="$gs/model_kill" \
  "${tiny[@]}" --train_steps=$((latest + 2))
grep -qF "(global step $latest)" "$work/kill_resume.log" || {
  cat "$work/kill_resume.log" >&2
  die "the restart did not resume from step $latest"
}
say "8/10: export_model killed (SIGKILL) while it writes to gs:// leaves no half version to pick"
run export_kill_first "$bin/export_model" --model_dir="$gs/model" --export_dir="$gs/exports_kill" \
  --format=safetensors
for round in $(seq 10); do
  "$bin/export_model" --model_dir="$gs/model" --export_dir="$gs/exports_kill" --format=safetensors \
    >"$work/export_victim_$round.log" 2>&1 &
  victim=$!
  sleep "0.$((RANDOM % 10))"
  kill -9 "$victim" 2>/dev/null || true
  wait "$victim" 2>/dev/null || true
  # The newest version whose marker object (model.safetensors, written last) exists must load.
  run "export_kill_classify_$round" "$bin/classify" --model_dir="$gs/exports_kill" --num_threads=1 \
    "$gs/images/cat.JPEG"
done
# Where the kills landed depends on the machine: say how many came before the export finished.
unfinished=$(grep -L '^Exported ' "$work"/export_victim_*.log | wc -l)
say "  $unfinished of 10 exports were killed before they finished"
run export_kill_last "$bin/export_model" --model_dir="$gs/model" --export_dir="$gs/exports_kill" \
  --format=safetensors

say "9/10: a sweep whose directory is gs://"
cat >"$work/sweep.json" <<EOF
{"trainer": "inception_v3",
 "flags": {"use_tpu": false, "iterations": 2, "train_batch_size": 2, "eval_batch_size": 2,
           "eval_total_size": 8, "width": 75, "height": 75, "num_classes": 11,
           "save_checkpoints_secs": 0, "train_steps_per_eval": 2, "seed": 3,
           "num_parallel_calls": 1, "data_dir": "$gs/data"},
 "grid": {"learning_rate": [0.1, 0.02], "depth_multiplier": [0.1]},
 "metric": "loss", "budget": {"train_steps": 4}}
EOF
run sweep_gs "$bin/sweep" --sweep_dir="$gs/sweep" --config="$work/sweep.json" --parallel=2
run sweep_local "$bin/sweep" --sweep_dir="$work/sweep" --config="$work/sweep.json" --parallel=2
objects sweep/ >"$work/sweep_objects.txt"
variants=$(cd "$work/sweep" && ls -d 0*/)
[[ $(echo "$variants" | wc -w) == 2 ]] || die "the local sweep made $variants, not 2 variants"
for v in $variants; do
  for name in result.json train.log model/checkpoint export/; do
    grep -q "^sweep/$v$name" "$work/sweep_objects.txt" || die "gs://$bucket/sweep/$v$name is missing"
  done
  grep -q "^sweep/${v}events.out.tfevents" "$work/sweep_objects.txt" ||
    die "no HParams session event file in gs://$bucket/sweep/$v"
  download "sweep/${v}train.log" "$work/sweep_train.log"
  grep -q "examples/sec" "$work/sweep_train.log" ||
    die "gs://$bucket/sweep/${v}train.log has no trainer output"
done
grep -q "^sweep/events.out.tfevents" "$work/sweep_objects.txt" ||
  die "no HParams experiment in gs://$bucket/sweep"
grep -q "^sweep/serving/[0-9]*/saved_model.pb$" "$work/sweep_objects.txt" ||
  die "no winner in gs://$bucket/sweep/serving"
grep -q "^sweep/serving/[0-9]*/assets.extra/sweep_winner.json$" "$work/sweep_objects.txt" ||
  die "the winner in gs://$bucket/sweep/serving has no sweep_winner.json"
download sweep/leaderboard.csv "$work/leaderboard_gs.csv" || die "no gs://$bucket/sweep/leaderboard.csv"
# The scores (not the timing columns) equal the local sweep's: the runs are the same bit for bit.
cmp -s <(cut -d, -f1-7 "$work/leaderboard_gs.csv") <(cut -d, -f1-7 "$work/sweep/leaderboard.csv") ||
  die "the gs:// leaderboard $(cat "$work/leaderboard_gs.csv") differs from the local one $(cat "$work/sweep/leaderboard.csv")"
run sweep_classify "$bin/classify" --model_dir="$gs/sweep/serving" --num_threads=1 "$gs/images/cat.JPEG"
run sweep_again "$bin/sweep" --sweep_dir="$gs/sweep" --config="$work/sweep.json" --parallel=2
if grep -q "sweep: training" "$work/sweep_again.log"; then
  die "the sweep run again retrained: $(cat "$work/sweep_again.log")"
fi
[[ $(grep -c "is finished already" "$work/sweep_again.log") == 2 ]] ||
  die "the sweep run again did not find both variants finished: $(cat "$work/sweep_again.log")"
# The same sweep under mpirun, two groups of one process, each training a variant in-process:
# its logs are staged and published from inside the sweep's own processes.
run sweep_groups mpirun -np 2 --oversubscribe --allow-run-as-root -x STORAGE_EMULATOR_HOST \
  "$bin/sweep" --sweep_dir="$gs/sweep_groups" --config="$work/sweep.json" --groups=2
cmp -s <(cut -d, -f1-7 "$work/leaderboard_gs.csv") \
  <(download sweep_groups/leaderboard.csv /dev/stdout | cut -d, -f1-7) ||
  die "the gs:// sweep under mpirun gave another leaderboard than the one without"
for v in $variants; do
  download "sweep_groups/${v}train.log" "$work/sweep_train.log" ||
    die "gs://$bucket/sweep_groups/${v}train.log is missing"
  grep -q "examples/sec" "$work/sweep_train.log" ||
    die "gs://$bucket/sweep_groups/${v}train.log has no trainer output"
done

say "10/10: the model zoo trains to, exports to and is served from gs://"
zoo=(mobilenet_v1 mobilenet_v2 densenet121 squeezenet1_0 squeezenet1_1 efficientnet_b0)
# 64 x 64 fits them all; a batch of 4 with batch norm on the last batch's statistics keeps
# the logits from saturating after two steps.
zoo_flags=(--mode=train --data_dir="$gs/data" --use_tpu=False --num_threads=1 --iterations=2
           --train_batch_size=4 --width=64 --height=64 --num_classes=11 --train_steps=2
           --save_checkpoints_secs=0 --num_parallel_calls=1 --seed=3 --batch_norm_decay=0
           --moving_average=false)
echo "model_config_list {" >"$work/zoo.config"
for model in "${zoo[@]}"; do
  run "zoo_train_$model" "$bin/$model" "${zoo_flags[@]}" --model_dir="$gs/zoo/$model" \
    --export_dir="$gs/zoo_exports/$model"
  objects "zoo_exports/$model/" >"$work/zoo_objects.txt"
  version=$(sed -n "s|^zoo_exports/$model/\([0-9]*\)/saved_model.pb$|\1|p" "$work/zoo_objects.txt")
  [[ -n $version ]] || die "$model wrote no gs://$bucket/zoo_exports/$model/<N>/saved_model.pb"
  echo "$version" >"$work/zoo_version_$model"
  run "zoo_classify_$model" "$bin/classify" --model_dir="$gs/zoo/$model" --num_threads=1 \
    --logits_out="$work/zoo_$model.npy" "$gs/images/cat.JPEG"
  run "zoo_classify_export_$model" "$bin/classify" --model_dir="$gs/zoo_exports/$model" \
    --num_threads=1 --logits_out="$work/zoo_export_$model.npy" "$gs/images/cat.JPEG"
  cmp -s "$work/zoo_$model.npy" "$work/zoo_export_$model.npy" ||
    die "classify's logits from $model's gs:// export differ from its gs:// checkpoint's"
  printf '  config { name: "%s" base_path: "%s" model_platform: "tensorflow" }\n' \
    "$model" "$gs/zoo_exports/$model" >>"$work/zoo.config"
done
echo "}" >>"$work/zoo.config"
serve_port=$(free_port)
"$bin/serve" --model_config_file="$work/zoo.config" --port=0 --rest_api_port="$serve_port" \
  --num_threads=1 >"$work/zoo_serve.log" 2>&1 &
server=$!
pids+=($server)
for model in "${zoo[@]}"; do
  version=$(cat "$work/zoo_version_$model")
  for _ in $(seq 300); do
    curl -sf -o /dev/null "http://127.0.0.1:$serve_port/v1/models/$model/versions/$version" && break
    sleep 0.1
  done
  curl -sf -X POST --data-binary @"$work/predict.json" \
    "http://127.0.0.1:$serve_port/v1/models/$model/versions/$version:predict" \
    >"$work/zoo_predicted.json" || {
    cat "$work/zoo_serve.log" >&2
    die "serve did not answer the predict of $model version $version from gs://"
  }
  grep -q '"predictions"' "$work/zoo_predicted.json" ||
    die "serve's answer for $model has no predictions: $(cat "$work/zoo_predicted.json")"
done
kill "$server"
wait "$server" || die "serve did not exit 0 on SIGTERM: $(tail -3 "$work/zoo_serve.log")"
say "passed"
