# Sourced by the scripts that need Python packages from PyPI (tests/interop, tests/storage,
# bench/gcs_read_bench.sh). One function:
#   venv=$(cached_venv NAME REQUIREMENTS CHECK) || exit 1
# makes (once) and prints the path of a virtual environment with the pinned packages of
# REQUIREMENTS, cached under ${XDG_CACHE_HOME:-~/.cache}/inception.cpp/NAME-venv-<key>, the key
# a hash of those pins and the Python version, so editing the pins makes a fresh one. CHECK is
# Python code that must run in it (imports). Anything that cannot be made fails loudly (a
# message on stderr, non-zero status); nothing is skipped. PYTHON picks the interpreter.
cached_venv() {
  local name=$1 requirements=$2 check=$3
  local python=${PYTHON:-python3}
  command -v "$python" >/dev/null || { echo "$name: $python not found" >&2; return 1; }
  local key
  key=$({
    "$python" -c 'import sys; print(sys.version)'
    cat "$requirements"
  } | sha256sum | cut -c1-16)
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/inception.cpp
  local venv=$cache/$name-venv-$key
  if [[ ! -f $venv/.complete ]]; then
    echo "$name: making the Python environment $venv from $requirements (PyPI, once)" >&2
    rm -rf "$venv"
    mkdir -p "$cache"
    "$python" -m venv "$venv" || {
      echo "$name: FAILED: cannot create a virtual environment with $python -m venv (Debian: apt-get install python3-venv)" >&2
      return 1
    }
    "$venv/bin/pip" install --disable-pip-version-check --no-input -q -r "$requirements" || {
      echo "$name: FAILED: cannot install the pinned packages of $requirements from PyPI" >&2
      return 1
    }
    "$venv/bin/python" -c "$check" || {
      echo "$name: FAILED: the environment $venv does not pass: $check" >&2
      return 1
    }
    touch "$venv/.complete"
  fi
  echo "$venv"
}
