#!/usr/bin/env bash
# The web page at / in a real browser: headless Chromium loads the page served by `serve` (a
# tiny model trained here), the page submits a test image by itself (?image=<data: URL>), and
# the rendered DOM must show the top-5 rows with their bars.
#   tests/serve/browser_test.sh BIN_DIR [SCREENSHOT.png]
# A second argument also saves a screenshot of the rendered page (docs/images/serve.png).
# Exits 77 (CTest's skip code) when no chromium is installed.
set -euo pipefail
bin=${1:?usage: browser_test.sh BIN_DIR [SCREENSHOT.png]}
screenshot=${2:-}
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
  echo "browser_test: no chromium installed; skipped"
  exit 77
fi
work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/inception_v3" --mode=train --use_data=fake --use_tpu=False --num_threads=1 --iterations=2 \
  --train_batch_size=2 --width=75 --height=75 --depth_multiplier=0.1 --num_classes=11 \
  --save_checkpoints_secs=0 --train_steps=2 --model_dir="$work/model" >"$work/train.log" 2>&1
for i in $(seq 0 10); do echo "$i test class $i"; done >"$work/labels.txt"
"$bin/serve" --model_dir="$work/model" --port=0 --rest_api_port=-1 --num_threads=1 --labels_file="$work/labels.txt" \
  2>"$work/serve.log" &
server_pid=$!
port=
for _ in $(seq 1 200); do
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/serve.log" | grep -o '[0-9]*$' || true)
  [[ -n $port ]] && break
  sleep 0.05
done
[[ -n $port ]] || { echo "browser_test: serve did not start"; cat "$work/serve.log"; exit 1; }

# A small PNG (a colour gradient), written with Python's standard library only.
image=$(python3 - <<'PY'
import base64, struct, zlib
w, h = 48, 40
rows = b"".join(b"\0" + bytes(v for x in range(w) for v in (x * 5 % 256, y * 6 % 256, (x + y) * 3 % 256)) for y in range(h))
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
# Percent-encoded: in a query string '+' would read as a space.
print(base64.b64encode(png).decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"))
PY
)
url="http://127.0.0.1:$port/?image=data:image/png;base64%2C$image"
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run
       --user-data-dir="$work/profile" --virtual-time-budget=20000 --window-size=800,640)
timeout 120 "$browser" "${flags[@]}" --dump-dom "$url" >"$work/dom.html" 2>"$work/browser.log" || {
  echo "browser_test: chromium failed"; tail -20 "$work/browser.log"; exit 1; }

rows=$( (grep -o 'class="row"' "$work/dom.html" || true) | wc -l)
bars=$( (grep -o 'class="bar" style="width: [0-9]*px' "$work/dom.html" || true) | wc -l)
if ! grep -q 'data-done="1"' "$work/dom.html" || [[ $rows -ne 5 || $bars -ne 5 ]] ||
   ! grep -q 'test class' "$work/dom.html"; then
  echo "browser_test: the page did not show the top-5 (rows=$rows bars=$bars)"
  grep -o '<div id="error">[^<]*' "$work/dom.html" || true
  cp "$work/dom.html" "${TMPDIR:-/tmp}/browser_test_dom.html"
  echo "browser_test: the rendered page is in ${TMPDIR:-/tmp}/browser_test_dom.html"
  exit 1
fi
echo "browser_test: the page shows the top-5 with bars"
if [[ -n $screenshot ]]; then
  timeout 120 "$browser" "${flags[@]}" --screenshot="$screenshot" "$url" >/dev/null 2>>"$work/browser.log"
  echo "browser_test: screenshot in $screenshot"
fi
