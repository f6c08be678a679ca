#!/usr/bin/env bash
# The model zoo's mobile and dense networks on the CPU against their peers: for each model of
# MODELS (default mobilenet_v2 efficientnet_b0 densenet121, at 224x224), one run of
# bench/cpu_precision.sh in float32 and bfloat16 against PyTorch (torchvision, channels_last,
# f32 and autocast bf16, training and inference) and OpenVINO (our ONNX export, f32 and its
# default precision), inference at batch 1 and 32 and training at batch 32. Each model's table
# gives images/sec (min / median / max over REPEATS), ours / peer at the same precision, and our
# achieved GFLOP/s and GB/s: depthwise convolutions and the elementwise ops around them are
# bound by memory, not by multiply-adds.
#
#   bench/cpu_model_zoo.sh                 (REPEATS=3; build/bin/inception_bench, built if needed)
#   env: MODELS="..." REPEATS PEERS PRECISIONS INFER_BATCHES TRAIN_BATCH, and cpu_precision.sh's
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
[[ ${SKIP_BUILD:-0} == 1 ]] || cmake --build "$build" --target inception_bench >/dev/null || {
  echo "cpu_model_zoo: FAILED: cannot build inception_bench in $build" >&2
  exit 1
}
status=0
for model in ${MODELS:-mobilenet_v2 efficientnet_b0 densenet121}; do
  echo "######## $model"
  MODEL=$model SKIP_BUILD=1 PRECISIONS=${PRECISIONS:-float32 bfloat16} \
    PEERS=${PEERS:-torch openvino} INFER_BATCHES=${INFER_BATCHES:-1 32} \
    bash bench/cpu_precision.sh || status=1
done
exit $status
