#!/usr/bin/env bash
# Successive halving against the full grid, on Fashion-MNIST with the walk-through's recipe
# (scripts/fashion_mnist.sh): 8 variants, learning rate x depth multiplier x label smoothing,
# each trained by `sweep` as a train_and_eval run. The full grid trains every variant to the
# budget; halving (eta 2) trains all 8 to 1/8 of it, the best 4 on to 1/4, the best 2 to 1/2
# and the best one to the end, each continuing from its checkpoints. Prints the machine, each
# sweep's leaderboard and wall time, the two winners with their accuracy (on all 10000 test
# images) and halving's wall time as a fraction of the grid's. The two run one after the other,
# alone on the machine.
#
#   bench/sweep_halving.sh [work_dir]          (default /tmp/sweep_halving; needs build/bin)
#   env: TRAIN_STEPS (4800: the budget), BATCH (64), STEPS_PER_EVAL (600), FIRST_RUNG (600:
#        halving's first rung; 0: as many rungs as halvings take 8 variants to 1), ETA (2),
#        DEPTHS ("0.25, 0.35": the depth multipliers), PARALLEL (2: variants at once, the cores
#        split between them), BIN (build/bin), SKIP_GRID (1: halving only)
# Why the first rung is not tiny: the evaluations use batch norm's moving statistics (decay
# 0.996), which lag the weights by a few hundred steps; before about step 500 every variant
# evaluates near chance (10%), and a rung there drops variants at random.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/machine.sh
bin=${BIN:-build/bin}
work=${1:-/tmp/sweep_halving}
steps=${TRAIN_STEPS:-4800}
batch=${BATCH:-64}
per_eval=${STEPS_PER_EVAL:-600}
first_rung=${FIRST_RUNG:-600}
eta=${ETA:-2}
depths=${DEPTHS:-0.25, 0.35}
parallel=${PARALLEL:-2}
print_machine
BIN=$bin DATA_ONLY=1 scripts/fashion_mnist.sh "$work/fashion_mnist" >/dev/null
data=$work/fashion_mnist/tfrecord

# config SCHEDULE: the sweep config, with Fashion-MNIST's flags as scripts/fashion_mnist.sh
# gives them (learning rate, depth multiplier and label smoothing are the grid; the learning
# rate is per 256 images, as the reference's).
config() {
  local budget="\"train_steps\": $steps"
  if [[ $1 == halving ]]; then
    budget+=", \"eta\": $eta"
    ((first_rung > 0)) && budget+=", \"first_rung_steps\": $first_rung"
  fi
  cat <<JSON
{"trainer": "inception_v3", "schedule": "$1",
 "flags": {"data_dir": "$data", "num_classes": 11, "width": 75, "height": 75,
           "train_batch_size": $batch, "train_steps_per_eval": $per_eval, "iterations": 100,
           "eval_batch_size": 500, "num_train_images": 60000, "weight_decay": 4e-4,
           "learning_rate_decay_epochs": 1, "learning_rate_decay": 0.94, "min_crop_area": 0.8,
           "cb_distortion_range": 0, "cr_distortion_range": 0, "save_checkpoints_secs": 0},
 "grid": {"learning_rate": [0.04125, 0.0103125], "depth_multiplier": [$depths],
          "label_smoothing": [0.1, 0]},
 "metric": "accuracy", "budget": {$budget}}
JSON
}

# sweep NAME: runs the NAME schedule's sweep in $work/NAME (from scratch), prints its wall time.
sweep() {
  local dir=$work/$1
  rm -rf "$dir"
  mkdir -p "$dir"
  config "$1" >"$dir.json"
  local start end
  start=$(date +%s.%N)
  "$bin/sweep" --sweep_dir="$dir" --config="$dir.json" --parallel="$parallel" >"$dir.log" 2>&1 ||
    { tail -20 "$dir.log"; exit 1; }
  end=$(date +%s.%N)
  echo "== $1: $(echo "$end - $start" | bc) s"
  sed -n '/^sweep: leaderboard/,$p' "$dir.log"
  echo "$end - $start" | bc >"$dir.seconds"
}

if [[ ${SKIP_GRID:-0} != 1 ]]; then sweep full; fi
sweep halving
# winner NAME: the first leaderboard row's variant and best accuracy.
winner() { sed -n 2p "$work/$1/leaderboard.csv" | awk -F, '{ print $2, $5 }'; }
echo "== result"
echo "halving winner: $(winner halving)"
if [[ -f $work/full.seconds ]]; then
  echo "full grid winner: $(winner full)"
  echo "halving's wall time / the full grid's: $(echo "scale=3; $(cat "$work/halving.seconds") / $(cat "$work/full.seconds")" | bc)"
fi
