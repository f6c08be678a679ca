#!/usr/bin/env bash
# Checkpoint interoperability with TensorFlow itself, both ways (scripts/test.sh runs it after
# the Release tests; it needs build/bin):
#   1. our trainer writes a tiny model in TensorFlow's format and, with the same seed, in
#      safetensors; TensorFlow (tf.train.latest_checkpoint, load_checkpoint, Saver.restore)
#      must read every tensor bit for bit equal to the safetensors file (compare_with_safetensors.py)
#   2. TensorFlow's Saver writes a checkpoint of variables named as ours with other values
#      (write_with_tensorflow.py); our reader must read it bit for bit as TensorFlow does
#   3. our trainer resumes from TensorFlow's checkpoint and saves; TensorFlow reads the result;
#      a TensorFlow checkpoint of the network's variables only (as TF-slim publishes them)
#      warm-starts a 7-class fine-tuning of the logits (--trainable_scopes): the frozen weights
#      stay TensorFlow's, bit for bit
#   4. SavedModel exports of tiny inception_v3 (export_model), inception_v4 and resnet50 (the
#      trainers' --export_dir): TensorFlow loads each (tf.saved_model.load, and the TF1
#      Session loader TF Serving's restore path uses), its signatures are as documented,
#      serving_default on a few preprocessed images gives classify's softmax and argmax, and
#      classify on JPEG files (decoded and preprocessed inside the graph) gives what our
#      classify gives on the same files (check_saved_model.py)
#   5. the same for a full-size inception_v3 (299x299, 1001 classes) after one training step
#   6. ONNX Runtime runs our ONNX exports (export_model --format=onnx) of the same models on the
#      same images: max |dprob| <= 1e-4 against classify's softmax and the same top-1 class
#      (check_onnx_runtime.py)
#      (b) the QDQ export of an int8 model (export_onnx with a QuantizationTable): the
#      float32 export calibrated in ONNX Runtime (each layer's input max / 127, the layers
#      whose input is never negative), onnx_int8_export writes the QDQ file, and ONNX Runtime
#      runs it against the float32 export: max |dlogit| <= 0.1 max |logit| and the same top-1
#      class wherever the float32 margin is clear of that (check_onnx_qdq.py)
#      (c) export_model --format=int8 (calibrated on fake TFRecords): ONNX Runtime on its QDQ
#      model.onnx against classify --precision=int8 on its model.safetensors, max |dprob| <= 1e-2
#      and the same top-1 class
#   7. the same for the full-size inception_v3
#   8. the optimizer table's updates (optimizer_trace) against torch.optim.AdamW and NumPy
#      (LARS from its paper, TensorFlow's formulas for sgd, momentum and RMSProp), after every
#      step of a few, to a relative 1e-6 (check_optimizers.py); this step runs Debian's
#      python3-torch and python3-numpy through /usr/bin/python3 (scripts/install-deps.sh), not
#      the virtual environment: PyPI's torch is too large for CI
#   9. a sweep of 4 tiny variants: TensorBoard's own event reader reads its HParams experiment
#      and sessions, a real TensorBoard server lists the 4 session groups with their eval
#      accuracy, and headless Chromium renders the HParams dashboard with the sweep's flags
#      (check_tensorboard_hparams.py; HPARAMS_SCREENSHOT=FILE.png saves a screenshot of it)
#  10. the model zoo (MobileNet v1/v2, DenseNet-121, EfficientNet-B0, SqueezeNet 1.0/1.1) at
#      96x96: our weights loaded by name into Keras' application model (torchvision's for
#      SqueezeNet, on Debian's python3-torchvision) give classify's logits to 1e-5 of the largest
#      (or, where Keras' own float32 strays further from its float64 run, ours no further than
#      it) (check_keras_parity.py, check_torchvision_parity.py); their SavedModel and ONNX exports
#      as in 4 and 6
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

for tool in inception_v3 inception_v4 resnet50 inspect_checkpoint export_model classify \
  optimizer_trace onnx_int8_export make_fake_imagenet sweep mobilenet_v1 mobilenet_v2 \
  densenet121 efficientnet_b0 squeezenet1_0 squeezenet1_1; do
  [[ -x $bin/$tool ]] || die "$bin/$tool is not built (cmake --build build first)"
done
command -v "$python" >/dev/null || die "$python not found"

# The cached environment.
source "$root/scripts/python_venv.sh"
venv=$(cached_venv interop "$here/requirements.txt" "import numpy, tensorflow, onnxruntime") ||
  die "no Python environment with tensorflow and onnxruntime"
py=$venv/bin/python
export TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES=""

work=$(mktemp -d)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT
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

say "1/10: TensorFlow reads our checkpoint"
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

say "2/10: we read TensorFlow's checkpoint"
"$py" "$here/write_with_tensorflow.py" --source="$work/ours_tf/model.ckpt-4" \
  --model_dir="$work/theirs" --step=10 || die "TensorFlow could not write a checkpoint"
run inspect_theirs "$bin/inspect_checkpoint" --model_dir="$work/theirs" \
  --write_safetensors="$work/theirs_as_read_by_us.safetensors"
"$py" "$here/compare_with_safetensors.py" --model_dir="$work/theirs" \
  --safetensors="$work/theirs_as_read_by_us.safetensors" --step=10 ||
  die "we do not read TensorFlow's checkpoint as TensorFlow does"

say "3/10: our trainer resumes from TensorFlow's checkpoint"
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
say "3/10 (b): a TensorFlow checkpoint of the network's variables only warm-starts a fine-tuning run"
"$py" "$here/write_with_tensorflow.py" --source="$work/ours_tf/model.ckpt-4" \
  --model_dir="$work/slim" --step=1 --model_variables_only ||
  die "TensorFlow could not write a variables-only checkpoint"
run finetune "$bin/inception_v3" "${tiny[@]}" --num_classes=7 --train_steps=2 \
  --model_dir="$work/finetune" --warm_start_from="$work/slim/model.ckpt-1" \
  --trainable_scopes=InceptionV3/Logits,InceptionV3/AuxLogits
grep -qE "^Warm-starting from $work/slim/model.ckpt-1: [1-9][0-9]* of [0-9]+ variables loaded, [1-9][0-9]* start fresh" \
  "$work/finetune.log" || {
  cat "$work/finetune.log" >&2
  die "the trainer did not warm-start from TensorFlow's checkpoint (or loaded the 7-class logits)"
}
# The frozen layers' weights in our fine-tuned checkpoint are TensorFlow's values, bit for bit;
# the new 7-class logits exist.
"$py" - "$work/slim/model.ckpt-1" "$work/finetune/model.ckpt-2" <<'PY' ||
import sys, numpy as np, tensorflow as tf
theirs, ours = (tf.train.load_checkpoint(p) for p in sys.argv[1:])
frozen = [n for n in theirs.get_variable_to_shape_map()
          if n.endswith("/weights") and "Logits" not in n]
assert frozen, "no frozen weights to compare"
for name in frozen:
    a, b = theirs.get_tensor(name), ours.get_tensor(name)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name
logits = ours.get_tensor("InceptionV3/Logits/Conv2d_1c_1x1/weights")
assert logits.shape[-1] == 7, logits.shape
print("interop: %d frozen weight tensors equal TensorFlow's; logits %s" % (len(frozen), logits.shape))
PY
  die "the fine-tuned checkpoint does not hold TensorFlow's frozen weights"

# Preprocessed images for classify and the SavedModel alike: uniform in [-1, 1].
write_images() {  # path count height width seed
  "$py" -c 'import sys, numpy as np
path, n, h, w, seed = sys.argv[1], *map(int, sys.argv[2:])
np.save(path, np.random.RandomState(seed).uniform(-1, 1, (n, h, w, 3)).astype(np.float32))' "$@"
}

# Random-noise JPEGs of other sizes than the model's (the hardest case for the decoders), at
# most 2.2 times its side: classify decodes a JPEG whose central crop is 2x the model's input
# or more at a reduced DCT scale (data/preprocessing.h: allow_dct_scaling), faster but not
# TensorFlow's full-size decode and resize that the SavedModel graph does.
write_jpegs() {  # seed side path...
  "$py" -c 'import sys, numpy as np
from PIL import Image
rng = np.random.RandomState(int(sys.argv[1]))
side = int(sys.argv[2])
for k, path in enumerate(sys.argv[3:]):
    fh, fw = [(1.2, 1.6), (1.07, 0.8), (2.2, 1.47), (1.0, 1.0)][k % 4]
    h, w = int(side * fh), int(side * fw)
    Image.fromarray(rng.randint(0, 256, (h, w, 3), dtype=np.uint8)).save(path, quality=90)' "$@"
}

say "4/10: TensorFlow serves our SavedModel exports as classify computes"
run export_v3 "$bin/export_model" --model_dir="$work/ours_tf" --export_dir="$work/export_v3"
run train_v4 "$bin/inception_v4" "${tiny[@]}" --train_steps=2 --model_dir="$work/v4" \
  --export_dir="$work/export_v4"
run train_resnet50 "$bin/resnet50" "${tiny[@]}" --width=64 --height=64 --train_steps=2 \
  --model_dir="$work/resnet50" --export_dir="$work/export_resnet50"
cases=()
for model in v3:75 v4:75 resnet50:64; do
  name=${model%:*} side=${model#*:}
  model_dir=$work/$name
  [[ $name == v3 ]] && model_dir=$work/ours_tf
  write_images "$work/images_$name.npy" 3 "$side" "$side" 5
  run "classify_$name" "$bin/classify" --model_dir="$model_dir" \
    --logits_out="$work/logits_$name.npy" "$work/images_$name.npy"
  cases+=(--case "$work/export_$name" "$work/images_$name.npy" "$work/logits_$name.npy" 10)
  jpegs=("$work/${name}_a.jpg" "$work/${name}_b.jpg" "$work/${name}_c.jpg")
  write_jpegs 7 "$side" "${jpegs[@]}"
  run "classify_jpeg_$name" "$bin/classify" --model_dir="$model_dir" \
    --logits_out="$work/logits_jpeg_$name.npy" "${jpegs[@]}"
  cases+=(--jpeg_case "$work/export_$name" "$work/logits_jpeg_$name.npy"
    "$(IFS=,; echo "${jpegs[*]}")")
done
"$py" "$here/check_saved_model.py" "${cases[@]}" ||
  die "TensorFlow does not serve our SavedModel export as classify computes"

say "5/10: the same for a full-size inception_v3 (299x299, 1001 classes)"
run train_full "$bin/inception_v3" --mode=train --use_data=fake --use_tpu=False --train_steps=1 \
  --train_batch_size=2 --iterations=1 --save_checkpoints_secs=0 --seed=3 \
  --model_dir="$work/full" --export_dir="$work/export_full"
write_images "$work/images_full.npy" 2 299 299 6
run classify_full "$bin/classify" --model_dir="$work/full" --logits_out="$work/logits_full.npy" \
  "$work/images_full.npy"
jpegs=("$work/full_a.jpg" "$work/full_b.jpg" "$work/full_c.jpg" "$work/full_d.jpg")
write_jpegs 8 299 "${jpegs[@]}"
run classify_jpeg_full "$bin/classify" --model_dir="$work/full" \
  --logits_out="$work/logits_jpeg_full.npy" "${jpegs[@]}"
"$py" "$here/check_saved_model.py" \
  --case "$work/export_full" "$work/images_full.npy" "$work/logits_full.npy" 1001 \
  --jpeg_case "$work/export_full" "$work/logits_jpeg_full.npy" "$(IFS=,; echo "${jpegs[*]}")" ||
  die "TensorFlow does not serve the full-size inception_v3 export as classify computes"

# ONNX Runtime on model_dir $1's ONNX export (export_model --format=onnx into $2), given the
# images $3 classify produced the logits $4 for.
onnx_agrees() {
  local model_dir=$1 export_dir=$2 images=$3 logits=$4
  run "export_$(basename "$export_dir")" "$bin/export_model" --model_dir="$model_dir" \
    --export_dir="$export_dir" --format=onnx
  local files=("$export_dir"/*/model.onnx)
  [[ -f ${files[0]} ]] || die "export_model --format=onnx wrote no $export_dir/<seconds>/model.onnx"
  "$py" "$here/check_onnx_runtime.py" --onnx="${files[0]}" --inputs="$images" \
    --logits="$logits" --max_prob_diff=1e-4 ||
    die "ONNX Runtime does not run our ONNX export of $model_dir as classify does"
}

say "6/10: ONNX Runtime runs our ONNX exports as classify computes"
onnx_agrees "$work/ours_tf" "$work/onnx_v3" "$work/images_v3.npy" "$work/logits_v3.npy"
for name in v4 resnet50; do
  onnx_agrees "$work/$name" "$work/onnx_$name" "$work/images_$name.npy" "$work/logits_$name.npy"
done

# ONNX Runtime on the QDQ export of model_dir $1 (a tiny model of side $2) calibrated on
# images of its own against its float32 export ($3: that export's directory).
qdq_agrees() {
  local model_dir=$1 side=$2 float_export=$3 name
  name=$(basename "$float_export")
  local files=("$float_export"/*/model.onnx)
  write_images "$work/calibration_$name.npy" 8 "$side" "$side" 9
  write_images "$work/test_$name.npy" 16 "$side" "$side" 10
  run "calibration_$name" "$bin/onnx_int8_export" calibration "$model_dir" \
    "$work/calibration_$name.onnx"
  "$py" "$here/check_onnx_qdq.py" calibrate --onnx="$work/calibration_$name.onnx" \
    --inputs="$work/calibration_$name.npy" --table="$work/table_$name.txt" ||
    die "ONNX Runtime cannot calibrate the float32 export of $model_dir"
  run "qdq_$name" "$bin/onnx_int8_export" qdq "$model_dir" "$work/table_$name.txt" \
    "$work/qdq_$name.onnx"
  "$py" "$here/check_onnx_qdq.py" compare --float32="${files[0]}" --qdq="$work/qdq_$name.onnx" \
    --inputs="$work/test_$name.npy" --max_logit_error=0.1 ||
    die "ONNX Runtime's run of the QDQ export of $model_dir is not the float32 export's"
}

say "6/10 (b): ONNX Runtime runs the QDQ export of an int8 model as the float32 export"
qdq_agrees "$work/ours_tf" 75 "$work/onnx_v3"
qdq_agrees "$work/v4" 75 "$work/onnx_v4"
qdq_agrees "$work/resnet50" 64 "$work/onnx_resnet50"

say "6/10 (c): ONNX Runtime runs our int8 export's model.onnx as classify --precision=int8 computes"
run fake_data_int8 "$bin/make_fake_imagenet" --output_dir="$work/int8_data" \
  --num_train_images=16 --num_validation_images=2 --train_shards=1 --validation_shards=1 \
  --image_size=75 --num_classes=10
run export_int8 "$bin/export_model" --model_dir="$work/ours_tf" --export_dir="$work/int8_v3" \
  --format=int8 --calibration_data="$work/int8_data" --calibration_images=16
int8_files=("$work"/int8_v3/*/model.safetensors)
# IC_CONV_TIMING=0: every layer of the export in int8, as the QDQ file has them. Timed, a layer
# whose float32 plan is faster on this CPU stays float32 (Backend::int8_conv_pays), which the
# QDQ file cannot say; tests/infer/int8_test.cc checks that graph against float32.
run classify_int8 env IC_CONV_TIMING=0 "$bin/classify" --checkpoint="${int8_files[0]}" \
  --precision=int8 --logits_out="$work/logits_int8_v3.npy" "$work/images_v3.npy"
# Both quantize the same folded weights at the same scales; ONNX Runtime runs the QDQ graph's
# convolutions in float32 on the dequantized values, and a quantized input on an exact half
# may round to the other level (ours x * (1/s), ONNX x / s). Measured on this tiny model:
# max |dprob| 0.0018, max |dlogit| 0.021 against a top-1/top-2 margin of 0.25.
"$py" "$here/check_onnx_runtime.py" --onnx="$(dirname "${int8_files[0]}")/model.onnx" \
  --inputs="$work/images_v3.npy" --logits="$work/logits_int8_v3.npy" --max_prob_diff=1e-2 ||
  die "ONNX Runtime does not run the QDQ model.onnx of our int8 export as classify --precision=int8 does"

say "7/10: the same for the full-size inception_v3"
onnx_agrees "$work/full" "$work/onnx_full" "$work/images_full.npy" "$work/logits_full.npy"

say "8/10: the optimizers against torch.optim.AdamW and NumPy"
system_python=${SYSTEM_PYTHON:-/usr/bin/python3}
"$system_python" -c "import numpy, torch" ||
  die "$system_python has no torch or numpy (Debian: apt-get install python3-torch python3-numpy)"
run optimizer_trace "$bin/optimizer_trace" "$work/optimizer_trace"
"$system_python" "$here/check_optimizers.py" "$work/optimizer_trace" ||
  die "the optimizer table's updates differ from torch's and NumPy's"

say "9/10: a sweep's HParams summaries in TensorBoard's event reader, server and dashboard"
browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n $browser ]] || die "no chromium (Debian: apt-get install chromium)"
cat >"$work/sweep.json" <<'JSON'
{"trainer": "inception_v3",
 "flags": {"use_data": "fake", "use_tpu": false, "iterations": 2, "train_batch_size": 2,
           "eval_batch_size": 2, "eval_total_size": 4, "width": 75, "height": 75,
           "num_classes": 10, "save_checkpoints_secs": 0, "train_steps_per_eval": 2, "seed": 3},
 "grid": {"learning_rate": [0.1, 0.02], "depth_multiplier": [0.1, 0.2]},
 "metric": "accuracy", "budget": {"train_steps": 4}}
JSON
run sweep "$bin/sweep" --sweep_dir="$work/sweep" --config="$work/sweep.json" --parallel=2
"$py" "$here/check_tensorboard_hparams.py" "$work/sweep" "$work/sweep.json" "$venv/bin/tensorboard" \
  "$browser" ${HPARAMS_SCREENSHOT:+"$HPARAMS_SCREENSHOT"} ||
  die "TensorBoard does not show the sweep's HParams as it should"
say "10/10: the model zoo: Keras' and torchvision's networks on our weights give our logits"
# Each network at 96 x 96, 10 classes, after 2 training steps (batch norm keeping the last
# batch's statistics, no EMA, so the logits depend on the image): loaded by name into Keras'
# application model (torchvision's for SqueezeNet), whose logits on the same images must be
# classify's to 1e-5 of the largest; TensorFlow serves its SavedModel export and ONNX Runtime
# runs its ONNX export as classify computes, the export's classify(image_bytes) included: it
# preprocesses JPEGs inside the graph as the checkpoint records (VGG's for DenseNet and
# SqueezeNet, Inception's for the others).
write_images "$work/images_zoo.npy" 3 96 96 11
zoo_jpegs=("$work/zoo_a.jpg" "$work/zoo_b.jpg" "$work/zoo_c.jpg")
write_jpegs 9 96 "${zoo_jpegs[@]}"
zoo_cases=()
for model in mobilenet_v1 mobilenet_v2 densenet121 efficientnet_b0 squeezenet1_0 squeezenet1_1; do
  dir=$work/zoo_$model
  format=tf
  [[ $model == squeezenet* ]] && format=safetensors
  run "train_$model" "$bin/$model" --mode=train --use_data=fake --use_tpu=False --width=96 \
    --height=96 --num_classes=10 --iterations=2 --train_batch_size=4 --train_steps=2 \
    --save_checkpoints_secs=0 --num_threads=2 --num_parallel_calls=1 --seed=5 \
    --batch_norm_decay=0 --moving_average=false --checkpoint_format="$format" \
    --model_dir="$dir" --export_dir="$work/export_$model"
  run "classify_$model" "$bin/classify" --model_dir="$dir" --logits_out="$dir/logits.npy" \
    "$work/images_zoo.npy"
  if [[ $model == squeezenet* ]]; then
    "$system_python" "$here/check_torchvision_parity.py" --model="$model" \
      --checkpoint="$dir/model.ckpt-2.safetensors" --images="$work/images_zoo.npy" \
      --logits="$dir/logits.npy" --num_classes=10 ||
      die "torchvision's $model on our weights does not give classify's logits"
  else
    "$py" "$here/check_keras_parity.py" --model="$model" --checkpoint="$dir/model.ckpt-2" \
      --images="$work/images_zoo.npy" --logits="$dir/logits.npy" --num_classes=10 ||
      die "Keras' $model on our weights does not give classify's logits"
  fi
  zoo_cases+=(--case "$work/export_$model" "$work/images_zoo.npy" "$dir/logits.npy" 10)
  run "classify_jpeg_$model" "$bin/classify" --model_dir="$dir" \
    --logits_out="$dir/logits_jpeg.npy" "${zoo_jpegs[@]}"
  zoo_cases+=(--jpeg_case "$work/export_$model" "$dir/logits_jpeg.npy"
    "$(IFS=,; echo "${zoo_jpegs[*]}")")
  onnx_agrees "$dir" "$work/onnx_$model" "$work/images_zoo.npy" "$dir/logits.npy"
done
"$py" "$here/check_saved_model.py" "${zoo_cases[@]}" ||
  die "TensorFlow does not serve the model zoo's SavedModel exports as classify computes"
say "passed"
