#!/usr/bin/env bash
# SIGKILL soak: a small Inception v3 trainer, saving a checkpoint every second, is killed with
# SIGKILL at random moments (some inside checkpoint writes) and restarted, ROUNDS times; then it
# runs to the end. After every kill: each checkpoint left in the model_dir loads in full (CRCs
# included), the latest one resumes, and the global step never goes back.
#
#   tests/soak/sigkill_soak.sh BIN_DIR [ROUNDS]      (CTest runs it; BIN_DIR holds the programs)
set -uo pipefail
bin=${1:?usage: sigkill_soak.sh BIN_DIR [ROUNDS]}
rounds=${2:-8}
work=$(mktemp -d /tmp/ic_soak.XXXXXX)
trap 'rm -rf "$work"' EXIT
model=$work/model
steps=1000000  # never reached while being killed
RANDOM=12345  # the same kill times every run, so a failure can be repeated
# exec: the background job is then the trainer itself, which SIGKILL must reach.
train() {
  exec "$bin/inception_v3" --mode=train --use_data=fake --use_tpu=False --num_threads=1 \
    --width=75 --height=75 --depth_multiplier=1.0 --num_classes=11 --train_batch_size=2 \
    --iterations=1 --save_checkpoints_secs=1 --keep_checkpoint_max=3 \
    --model_dir="$model" "$@"
}
fail() { echo "sigkill_soak: FAILED: $*"; exit 1; }

last_step=0 inside_writes=0
for ((round = 1; round <= rounds; round++)); do
  delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 2.0 + 4.0 * r / 32767 }')
  (train --train_steps=$steps >"$work/log.$round" 2>&1) &
  pid=$!
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  # A round killed while still starting up (reading the checkpoint takes over a second, more on
  # a loaded machine) has not got to say so; one that trained must have resumed.
  if ((last_step > 0)) && grep -q "^step = " "$work/log.$round" &&
    ! grep -q "Restoring parameters from" "$work/log.$round"; then
    fail "round $round did not resume from step $last_step: $(head -5 "$work/log.$round")"
  fi
  # Every checkpoint on disk loads completely.
  shopt -s nullglob
  partial=("$model"/*.tmp-*)
  ((${#partial[@]})) && inside_writes=$((inside_writes + 1))
  for index in "$model"/model.ckpt-*.index; do
    "$bin/inspect_checkpoint" --file_name="$index" >/dev/null 2>"$work/inspect.err" ||
      fail "round $round: ${index##*/} left by a kill after ${delay}s does not load: $(cat "$work/inspect.err")"
  done
  step=$(sed -n 's/^model_checkpoint_path: "model.ckpt-\([0-9]*\)"$/\1/p' "$model/checkpoint" 2>/dev/null)
  step=${step:-0}
  ((step >= last_step)) || fail "round $round: the latest checkpoint went back from step $last_step to $step"
  echo "round $round: killed after ${delay}s; latest checkpoint at step $step"
  last_step=$step
done

steps=$((last_step + 5))
(train --train_steps=$steps >"$work/log.final" 2>&1) || fail "the final run did not finish: $(tail -3 "$work/log.final")"
grep -q "Restoring parameters from" "$work/log.final" || ((last_step == 0)) ||
  fail "the final run did not resume: $(head -5 "$work/log.final")"
final=$(sed -n 's/^model_checkpoint_path: "model.ckpt-\([0-9]*\)"$/\1/p' "$model/checkpoint")
[[ $final == "$steps" ]] || fail "the final run ended at step $final, not $steps"
echo "sigkill_soak: $rounds kills ($inside_writes inside a checkpoint write) survived; every" \
  "checkpoint loaded; finished at step $final"
