#!/usr/bin/env bash
# Prepares a GPU run on this (Debian, GPU-less) machine: a Release build with the CUDA backend
# for sm_90, packed with the libraries the GPU machine lacks into .gpu/ic-bundle.tar.xz, plus
# Fashion-MNIST's four IDX files (Debian's dataset-fashion-mnist) in .gpu/fashion-mnist/.
# .gpu/ is git-ignored; send it along with the checkout, then on the GPU machine run
#   bash .gpu/device-bundle.sh run .gpu/ic-bundle.tar.xz -- bash scripts/gpu/check.sh
# (docs/gpu.md). The build, test binaries included, is what scripts/test.sh builds.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIC_WITH_CUDA=ON
cmake --build build -j "$(nproc)"
rm -rf .gpu
# Only the programs scripts/gpu/check.sh and bench/gpu/run.sh use: a device call carries 64 MiB.
bash scripts/gpu/device-bundle.sh pack build .gpu backend_test train_test inception_v3 mobilenet_v2 \
  classify make_fake_imagenet fashion_mnist_to_raw imagenet_to_tfrecord export_model train_bench
mkdir -p .gpu/fashion-mnist
cp /usr/share/datasets/fashion-mnist/*-ubyte.gz .gpu/fashion-mnist/
grep -qxF "/.gpu/" "$(git rev-parse --git-dir)/info/exclude" 2>/dev/null ||
  { mkdir -p "$(git rev-parse --git-dir)/info" && echo "/.gpu/" >>"$(git rev-parse --git-dir)/info/exclude"; }
echo "ready: $(du -sm .gpu | cut -f1) MiB in .gpu/"
