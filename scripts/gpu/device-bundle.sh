#!/usr/bin/env bash
# Moves a build made on a Debian machine to a GPU machine that is not Debian and lacks our Debian
# libraries (oneDNN, protobuf, libjpeg-turbo, libpng, Open MPI's libraries) but has CUDA,
# cuDNN and cuBLAS (in its Python packages and/or its CUDA toolkit). Two verbs:
#
#   pack BUILD_DIR DEST_DIR [PROGRAM...]
#                                (build machine) writes DEST_DIR/ic-bundle.tar.xz: the named programs of
#                                BUILD_DIR/bin (all of them when none is named), stripped, and every
#                                shared library they need except the C runtime and CUDA's own
#                                libraries, plus this script as DEST_DIR/device-bundle.sh.
#   run  BUNDLE -- COMMAND...    (GPU machine) unpacks BUNDLE to /tmp/ic-bundle (again whenever the
#                                bundle changed), puts its lib/ and the machine's cuDNN / cuBLAS /
#                                CUDA runtime folders on LD_LIBRARY_PATH, and runs COMMAND with
#                                IC_BIN=/tmp/ic-bundle/bin in the environment.
#
# docs/gpu.md shows the whole round trip (scripts/gpu/prepare.sh packs, scripts/gpu/check.sh runs).
set -euo pipefail

# The C runtime must be the machine's own. The C++ runtime is packed aside (lib/fallback) and
# used only when the machine's libstdc++ is older than the one we built with: a newer one there
# must win, since that machine's cuDNN may need it.
readonly C_RUNTIME='/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libresolv)\.so'
readonly CXX_RUNTIME='/(libstdc\+\+|libgcc_s)\.so'
# CUDA's libraries must match the machine's driver: never pack ours.
readonly CUDA_LIBS='/lib(cuda|cudart|cublas|cublasLt|cudnn[^/]*|nvjpeg|nccl|nvrtc|cufft|curand)\.so'

pack() {
  local build=$1 dest=$2 stage lib program
  shift 2
  [[ -d $build/bin ]] || { echo "device-bundle: $build/bin does not exist (build first)" >&2; exit 1; }
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/bin" "$stage/lib/fallback" "$dest"
  if (($# == 0)); then
    cp -a "$build"/bin/. "$stage/bin/"
  else
    for program in "$@"; do
      [[ -x $build/bin/$program ]] || { echo "device-bundle: no program $build/bin/$program" >&2; exit 1; }
      cp -a "$build/bin/$program" "$stage/bin/"
    done
  fi
  # The device call carries at most 64 MiB: symbols are left behind.
  strip --strip-unneeded "$stage"/bin/*
  find "$stage/bin" -type f -perm -u+x -exec ldd {} + 2>/dev/null |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -vE "$C_RUNTIME" | grep -vE "$CUDA_LIBS" |
    while read -r lib; do
      if [[ $lib =~ $CXX_RUNTIME ]]; then cp -L "$lib" "$stage/lib/fallback/"; else cp -L "$lib" "$stage/lib/"; fi
    done
  cp "$0" "$stage/device-bundle.sh"
  # xz, not gzip: oneDNN alone is 40 MB, and the call that carries the bundle carries 64 MiB.
  tar -C "$stage" -cf - . | xz -T0 -6 >"$dest/ic-bundle.tar.xz"
  cp "$0" "$dest/device-bundle.sh"
  echo "packed $dest/ic-bundle.tar.xz ($(du -m "$dest/ic-bundle.tar.xz" | cut -f1) MiB):" \
    "$(find "$stage/bin" -type f | wc -l) programs, $(find "$stage/lib" -type f | wc -l) libraries"
}

# Folders holding the machine's CUDA libraries: its Python packages (nvidia-*; CUDA 13 wheels put
# them under nvidia/cu13/lib, cuDNN under nvidia/cudnn/lib), its toolkit, and the driver's folder.
cuda_lib_dirs() {
  local dirs=()
  local py
  py=$(python3 - <<'PY' 2>/dev/null || true
import importlib, os
found = []
for mod in ["nvidia.cu13", "nvidia.cudnn", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.nvjpeg",
            "nvidia.nccl", "nvidia.cuda_nvrtc"]:
    try:
        m = importlib.import_module(mod)
    except Exception:
        continue
    for base in getattr(m, "__path__", []):
        for sub in ["lib", "lib64"]:
            d = os.path.join(base, sub)
            if os.path.isdir(d) and d not in found:
                found.append(d)
print(":".join(found))
PY
  )
  [[ -n $py ]] && dirs+=("$py")
  local d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [[ -d $d ]] && dirs+=("$d")
  done
  local IFS=:
  echo "${dirs[*]}"
}

run() {
  local bundle=$1
  shift
  [[ ${1:-} == -- ]] && shift
  [[ -f $bundle ]] || { echo "device-bundle: no bundle at $bundle" >&2; exit 1; }
  local root=/tmp/ic-bundle stamp
  stamp=$(cksum <"$bundle")
  if [[ ! -f $root/.stamp || $(cat "$root/.stamp") != "$stamp" ]]; then
    rm -rf "$root" && mkdir -p "$root"
    # GNU tar finds xz itself; Python's tarfile does where the xz program is missing.
    tar -C "$root" -xf "$bundle" 2>/dev/null ||
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle" "$root"
    echo "$stamp" >"$root/.stamp"
  fi
  local cuda
  cuda=$(cuda_lib_dirs)
  export LD_LIBRARY_PATH="$root/lib${cuda:+:$cuda}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The machine's C++ runtime unless it is older than ours (a GLIBCXX/CXXABI version missing).
  if ldd "$root/bin/inception_v3" 2>&1 | grep -qE "(GLIBCXX|CXXABI|GCC)_[0-9.]+' not found"; then
    echo "device-bundle: this machine's libstdc++ is older than the build's: using the packed one"
    export LD_LIBRARY_PATH="$root/lib/fallback:$LD_LIBRARY_PATH"
  fi
  export IC_BIN=$root/bin
  local missing
  missing=$(ldd "$root"/bin/* 2>&1 | grep -E "not found" | sort -u || true)
  [[ -z $missing ]] || { echo "device-bundle: unresolved libraries:"; echo "$missing"; }
  "$@"
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
