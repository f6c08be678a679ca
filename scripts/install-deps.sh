#!/usr/bin/env bash
# Installs every Debian package inception.cpp needs to build, test and benchmark.
# Usage (as root on Debian 12): scripts/install-deps.sh [--bench]
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git time
  libdnnl-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev
  libprotobuf-dev protobuf-compiler libleveldb-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-venv
  python3-torch python3-numpy  # tests/interop: torch.optim.AdamW and NumPy check the optimizers
  python3-torchvision          # tests/interop: SqueezeNet logits against torchvision's
  dataset-fashion-mnist
  clang libclang-rt-14-dev  # fuzz/: clang and libFuzzer's runtime (with ASan and UBSan)
  libonnx-dev                # export: ONNX's protobuf messages and its model checker
  libcpp-httplib-dev nlohmann-json3-dev  # serve: HTTP server, JSON
  libgrpc++-dev protobuf-compiler-grpc  # serve: the gRPC front end (TensorFlow Serving's gRPC API)
  libcurl4-openssl-dev libssl-dev        # gs:// and s3://: HTTPS requests, RS256 and SigV4 signing
  curl                       # tests/storage: creates, reads and lists objects in the emulator
  wrk chromium               # serve: the load benchmark and the browser test of its web page
  iproute2                   # tests/tools/two_hosts_test.sh: two network namespaces as two hosts
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-pil linux-perf)
fi
export DEBIAN_FRONTEND=noninteractive
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi
