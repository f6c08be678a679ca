#!/usr/bin/env bash
# Fashion-MNIST end to end: Debian's IDX files -> raw ImageNet layout -> TFRecords ->
# <model> --mode=train_and_eval -> classify on every test image, whose top-1 agreement
# with the labels is compared with the evaluation's accuracy.
#
#   scripts/fashion_mnist.sh [work_dir]        (default /tmp/fashion_mnist; needs build/bin)
# Environment: MODEL (inception_v3; or any trainer of build/bin: mobilenet_v1, mobilenet_v2,
# densenet121, efficientnet_b0, squeezenet1_0, squeezenet1_1, resnet50, inception_v4), PROCESSES (2: data parallel, one single-threaded replica per core, through
# mpirun; 1: one process on every core), TRAIN_STEPS (10000), STEPS_PER_EVAL (2500),
# EXTRA_FLAGS (appended to the trainer's flags), CLASSIFY_FLAGS (appended to classify's, e.g.
# --device=cuda:0), BIN (the programs; build/bin), FMNIST_IDX (the IDX files; Debian's folder),
# INT8 (1: also export the final checkpoint as int8 and classify the test images with it),
# DATA_ONLY (1: only make the TFRecords, in <work_dir>/tfrecord, and stop).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/bin}
work=${1:-/tmp/fashion_mnist}
raw=$work/raw data=$work/tfrecord model=$work/model
mkdir -p "$work"

[[ -d $raw/validation ]] ||
  $bin/fashion_mnist_to_raw --output_dir="$raw" ${FMNIST_IDX:+--input_dir="$FMNIST_IDX"}
[[ -f $data/validation-00003-of-00004 ]] ||
  $bin/imagenet_to_tfrecord --raw_data_dir="$raw" --local_scratch_dir="$data" \
    --train_shards=16 --validation_shards=4
[[ ${DATA_ONLY:-0} != 1 ]] || exit 0

# Small convolutions do not scale over two threads: two single-threaded replicas, each taking 64
# of the 128 images of a step, train about 30% faster than one process on two threads. (With 32
# images per replica, batch norm's statistics over the last blocks' 1x1 maps come from 32 values
# per channel, and evaluations swung by 1.5 points between checkpoints.)
processes=${PROCESSES:-2}
launch=()
if ((processes > 1)); then
  launch=(mpirun -np "$processes")
  if ((EUID == 0)); then launch+=(--allow-run-as-root); fi
fi

# Ten classes are labels 1..10 (0 is the background class, as ImageNet's 1001); crops keep at
# least 80% of the image and there is no chroma jitter (the images are grey).
# inception_v3: a depth multiplier of 0.25 and 75x75 images (the smallest Inception v3 takes).
# This is a 21-epoch run, not a 170-epoch one, so: the learning rate decays by 0.94 every epoch
# instead of every 3, starts at a quarter of the reference's (0.04125 per 256 images), and weight
# decay is 4e-4 instead of 4e-5 (docs/differences.md, --weight_decay). Everything else is the
# reference's recipe: RMSProp, label smoothing, aux loss, dropout, EMA.
# Any other model: 64x64 images (the 28x28 ones scaled up) and its own recipe as its program's
# defaults have it (docs/models.md), at batch 128, except batch norm's moving statistics, which
# decay by 0.9 instead of the reference's 0.997: in a run this short they otherwise lag the
# fast-changing weights, and MobileNet v2 evaluated at 10% after 500 steps (86% with 0.9 after
# 600; docs/fashion-mnist.md); and the Inception crops above for every model: SqueezeNet's VGG
# preprocessing resizes the shorter side to 300-600 before its 64x64 crop, a few of the
# original 28 pixels (it stayed at chance).
model_name=${MODEL:-inception_v3}
if [[ $model_name == inception_v3 ]]; then
  model_flags=(--width=75 --height=75 --depth_multiplier=0.25 --learning_rate=0.04125
    --weight_decay=4e-4 --learning_rate_decay_epochs=1 --learning_rate_decay=0.94)
else
  model_flags=(--width=64 --height=64 --batch_norm_decay=0.9 --preprocessing=inception)
fi
# shellcheck disable=SC2086
"${launch[@]}" $bin/$model_name --mode=train_and_eval --data_dir="$data" --model_dir="$model" \
  --num_classes=11 "${model_flags[@]}" \
  --train_batch_size=128 --train_steps="${TRAIN_STEPS:-10000}" --train_steps_per_eval="${STEPS_PER_EVAL:-2500}" \
  --iterations=200 --eval_batch_size=500 --num_train_images=60000 \
  --min_crop_area=0.8 --cb_distortion_range=0 --cr_distortion_range=0 \
  --save_checkpoints_secs=300 ${EXTRA_FLAGS:-}

# classify every test image with the final checkpoint; label k+1 is the k-th synset in sorted order.
sort -u "$raw/synset_labels.txt" | awk '{ print NR, $1 }' >"$work/labels.txt"
# top1 NAME CLASSIFY_FLAGS...: classifies every test image, prints the top-1 agreement.
top1() {
  local name=$1
  shift
  # shellcheck disable=SC2086
  ls "$raw/validation" | sort | sed "s|^|$raw/validation/|" |
    xargs $bin/classify --labels_file="$work/labels.txt" "$@" ${CLASSIFY_FLAGS:-} \
      >"$work/$name.txt"
  awk -v labels="$raw/synset_labels.txt" -v names="$work/labels.txt" -v name="$name" '
    BEGIN { while ((getline s < names) > 0) { split(s, f, " "); id[f[2]] = f[1] }
            while ((getline s < labels) > 0) truth[n++] = id[s] }
    /^[^ ]/ && $0 ~ /\.JPEG$/ { file = $0; want_top = 1; next }
    want_top && /^  / { split($0, f, " "); match(file, /[0-9]+\.JPEG$/);
                        i = substr(file, RSTART, RLENGTH - 5) + 0;
                        total++; if (f[2] == truth[i]) right++; want_top = 0 }
    END { printf "%s: %d of %d test images right (top-1 %.4f)\n", name, right, total, right / total }
  ' "$work/$name.txt"
}
top1 classify --model_dir="$model"

# INT8=1: the same checkpoint quantized after training (calibrated on 512 training images,
# docs/int8.md) and classified in int8.
if [[ ${INT8:-0} == 1 ]]; then
  rm -rf "$work/int8"
  $bin/export_model --model_dir="$model" --export_dir="$work/int8" --format=int8
  top1 classify_int8 --checkpoint="$(ls -d "$work"/int8/*/)model.safetensors" --precision=int8
fi
