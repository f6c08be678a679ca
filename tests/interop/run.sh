#!/usr/bin/env bash
# Checkpoint interoperability with TensorFlow itself, both ways (scripts/test.sh runs it after
# the Release tests; it needs build/bin):
#   1. our trainer writes a tiny model in TensorFlow's format and, with the same seed, in
#      safetensors; TensorFlow (tf.train.latest_checkpoint, load_checkpoint, Saver.restore)
#      must read every tensor bit for bit equal to the safetensors file (compare_with_safetensors.py)
#   2. TensorFlow's Saver writes a checkpoint of variables named as ours with other values
#      (write_with_tensorflow.py); our reader must read it bit for bit as TensorFlow does
#   3. our trainer resumes from TensorFlow's checkpoint and saves; TensorFlow reads the result
# Python comes from a virtual environment made once from PyPI with the pinned packages of
# requirements.txt, cached under ${XDG_CACHE_HOME:-~/.cache}/inception.cpp/ and keyed by those
# pins and the Python version. Anything that cannot be installed or run fails the script
# (non-zero exit and a message); nothing is skipped.
#   usage: tests/interop/run.sh            (IC_BIN_DIR=... for another build's bin directory)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/interop
bin=${IC_BIN_DIR:-$root/build/bin}
python=${PYTHON:-python3}

say() { echo "interop: $*"; }
die() {
  echo "interop: FAILED: $*" >&2
  exit 1
}

for tool in inception_v3 inspect_checkpoint; do
  [[ -x $bin/$tool ]] || die "$bin/$tool is not built (cmake --build build first)"
done
command -v "$python" >/dev/null || die "$python not found"

# The cached environment.
key=$({
  "$python" -c 'import sys; print(sys.version)'
  cat "$here/requirements.txt"
} | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/inception.cpp
venv=$cache/interop-venv-$key
if [[ ! -f $venv/.complete ]]; then
  say "making the Python environment $venv (tensorflow-cpu from PyPI, once)"
  rm -rf "$venv"
  mkdir -p "$cache"
  "$python" -m venv "$venv" ||
    die "cannot create a virtual environment with $python -m venv (Debian: apt-get install python3-venv)"
  "$venv/bin/pip" install --disable-pip-version-check --no-input -q -r "$here/requirements.txt" ||
    die "cannot install the pinned packages of tests/interop/requirements.txt from PyPI"
  "$venv/bin/python" -c "import numpy, tensorflow" || die "tensorflow does not import in $venv"
  touch "$venv/.complete"
fi
py=$venv/bin/python
export TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES=""

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A tiny deterministic model: one compute thread, one input thread, a fixed seed.
tiny=(--mode=train --use_data=fake --use_tpu=False --width=75 --height=75 --depth_multiplier=0.25
      --num_classes=10 --iterations=2 --train_batch_size=4 --save_checkpoints_secs=0
      --num_threads=1 --num_parallel_calls=1 --seed=3)
# Runs a program with its output in $work/<name>.log, shown if it fails.
run() {
  local name=$1
  shift
  local rc=0
  "$@" >"$work/$name.log" 2>&1 || rc=$?
  if ((rc != 0)); then
    cat "$work/$name.log" >&2
    die "$name: $* exited with $rc"
  fi
}

say "1/3: TensorFlow reads our checkpoint"
run train_tf "$bin/inception_v3" "${tiny[@]}" --train_steps=4 --model_dir="$work/ours_tf"
run train_safetensors "$bin/inception_v3" "${tiny[@]}" --train_steps=4 \
  --model_dir="$work/ours_safetensors" --checkpoint_format=safetensors
for f in model.ckpt-4.index model.ckpt-4.data-00000-of-00001; do
  [[ -f $work/ours_tf/$f ]] || die "the default format wrote no $f"
done
"$py" "$here/compare_with_safetensors.py" --model_dir="$work/ours_tf" \
  --safetensors="$work/ours_safetensors/model.ckpt-4.safetensors" --step=4 \
  --ignore_metadata=flags --ignore_metadata=run_id ||
  die "TensorFlow does not read our checkpoint as we wrote it"

say "2/3: we read TensorFlow's checkpoint"
"$py" "$here/write_with_tensorflow.py" --source="$work/ours_tf/model.ckpt-4" \
  --model_dir="$work/theirs" --step=10 || die "TensorFlow could not write a checkpoint"
run inspect_theirs "$bin/inspect_checkpoint" --model_dir="$work/theirs" \
  --write_safetensors="$work/theirs_as_read_by_us.safetensors"
"$py" "$here/compare_with_safetensors.py" --model_dir="$work/theirs" \
  --safetensors="$work/theirs_as_read_by_us.safetensors" --step=10 ||
  die "we do not read TensorFlow's checkpoint as TensorFlow does"

say "3/3: our trainer resumes from TensorFlow's checkpoint"
run resume "$bin/inception_v3" "${tiny[@]}" --train_steps=12 --model_dir="$work/theirs"
grep -qF "Restoring parameters from $work/theirs/model.ckpt-10 (global step 10)" \
  "$work/resume.log" || {
  cat "$work/resume.log" >&2
  die "the trainer did not resume from TensorFlow's model.ckpt-10"
}
run inspect_resumed "$bin/inspect_checkpoint" --model_dir="$work/theirs" \
  --write_safetensors="$work/resumed.safetensors"
"$py" "$here/compare_with_safetensors.py" --model_dir="$work/theirs" \
  --safetensors="$work/resumed.safetensors" --step=12 ||
  die "TensorFlow does not read the checkpoint saved after resuming"
say "passed"
