#!/usr/bin/env bash
# Installs what is needed, builds, and trains a small Inception v3 for a few steps on fake
# ImageNet (the tutorial's --use_data=fake), printing the training log.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
model_dir=$(mktemp -d /tmp/inception_v3.XXXXXX)
build/bin/inception_v3 --mode=train --use_data=fake --use_tpu=False \
  --train_steps=20 --iterations=5 --train_batch_size=8 \
  --width=128 --height=128 --depth_multiplier=0.25 \
  --model_dir="$model_dir" "$@"
echo "checkpoints and TensorBoard events are in $model_dir"
