"""A sweep's HParams summaries as TensorBoard itself reads and shows them.

  check_tensorboard_hparams.py SWEEP_DIR CONFIG.json TENSORBOARD CHROMIUM [SCREENSHOT.png]

1. TensorBoard's own event reader (EventAccumulator) reads the experiment in SWEEP_DIR and a
   session in each variant's directory: the experiment names every flag the config varies, and
   each session holds its variant's flag values and ended with STATUS_SUCCESS.
2. A real TensorBoard server on a loopback port: its HParams plugin API lists one session group
   per variant, each with its flag values and an eval accuracy.
3. Headless Chromium renders TensorBoard's HParams dashboard; the text of the page (shadow DOM
   included, read through the DevTools protocol) must show every flag name and every variant.
   A screenshot of it is saved when asked (docs/images/sweep_hparams.png).
Exits non-zero, saying what differs, on any mismatch.
"""
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2


def fail(message):
    print("check_tensorboard_hparams: " + message, file=sys.stderr)
    sys.exit(1)


def hparams_summaries(directory):
    accumulator = EventAccumulator(directory)
    accumulator.Reload()
    try:
        content = accumulator.PluginTagToContent("hparams")
    except KeyError:  # no summary of the plugin at all
        return {}
    return {tag: plugin_data_pb2.HParamsPluginData.FromString(data) for tag, data in content.items()}


def value_of(v):
    kind = v.WhichOneof("kind")
    return getattr(v, kind)


def variant_flags(config):
    """The variants' names and flags, as the sweep names them (grid, then the list)."""
    sets = [[]]
    for name, values in config.get("grid", {}).items():
        sets = [s + [(name, v)] for s in sets for v in values]
    if "grid" not in config:
        sets = []
    sets += [list(item.items()) for item in config.get("variants", [])]
    return sets


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post_json(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


class DevTools:
    """The smallest WebSocket client the DevTools protocol needs (RFC 6455, text frames)."""

    def __init__(self, ws_url):
        host_port, path = ws_url[len("ws://"):].split("/", 1)
        host, port = host_port.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += self.sock.recv(4096)
        if b" 101 " not in reply.split(b"\r\n", 1)[0]:
            fail("DevTools refused the WebSocket: " + reply.decode(errors="replace"))
        self.pending = reply.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0

    def _recv_exact(self, n):
        while len(self.pending) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                fail("DevTools closed the connection")
            self.pending += chunk
        data, self.pending = self.pending[:n], self.pending[n:]
        return data

    def _send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        elif len(payload) < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _recv(self):
        message = b""
        while True:
            first, second = self._recv_exact(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._recv_exact(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._recv_exact(8))[0]
            message += self._recv_exact(length)
            if first & 0x80:
                return json.loads(message)

    def call(self, method, **params):
        self.next_id += 1
        self._send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = self._recv()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    fail(f"DevTools {method}: {reply['error']}")
                return reply["result"]


# Every piece of text on the page, shadow roots included.
PAGE_TEXT = """(() => {
  const walk = (node) => {
    let text = '';
    if (node.shadowRoot) text += walk(node.shadowRoot);
    for (const child of node.childNodes)
      text += child.nodeType === Node.TEXT_NODE ? child.textContent + ' ' : walk(child);
    return text;
  };
  return walk(document.body);
})()"""


def main():
    sweep_dir, config_path, tensorboard, chromium = sys.argv[1:5]
    screenshot = sys.argv[5] if len(sys.argv) > 5 else None
    config = json.load(open(config_path))
    variants = variant_flags(config)
    names = sorted(d for d in os.listdir(sweep_dir) if os.path.isdir(os.path.join(sweep_dir, d))
                   and d[:2].isdigit())
    if len(names) != len(variants):
        fail(f"{len(names)} variant directories in {sweep_dir}, the config has {len(variants)}")

    # 1. TensorBoard's event reader.
    root = hparams_summaries(sweep_dir)
    if "_hparams_/experiment" not in root:
        fail(f"no HParams experiment in {sweep_dir}: {sorted(root)}")
    experiment = root["_hparams_/experiment"].experiment
    flag_names = [h.name for h in experiment.hparam_infos]
    wanted = list(dict.fromkeys(name for flags in variants for name, _ in flags))
    if flag_names != wanted:
        fail(f"the experiment's hparams are {flag_names}, the config varies {wanted}")
    metrics = [(m.name.group, m.name.tag) for m in experiment.metric_infos]
    if ("model/eval", "accuracy") not in metrics:
        fail(f"the experiment's metrics {metrics} lack model/eval accuracy")
    for name, flags in zip(names, variants):
        session = hparams_summaries(os.path.join(sweep_dir, name))
        start = session.get("_hparams_/session_start_info")
        end = session.get("_hparams_/session_end_info")
        if start is None or end is None:
            fail(f"{name}: session start {start is not None}, end {end is not None}")
        got = {k: value_of(v) for k, v in start.session_start_info.hparams.items()}
        for flag, value in flags:
            if got.get(flag) != value:
                fail(f"{name}: hparam {flag} is {got.get(flag)!r}, the config says {value!r}")
        if end.session_end_info.status != 1:
            fail(f"{name}: the session ended with status {end.session_end_info.status}")
    print(f"event reader: experiment with {flag_names}, {len(names)} sessions")

    # 2. A real TensorBoard.
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="tensorboard-", suffix=".log", delete=False)
    server = subprocess.Popen([tensorboard, "--logdir", sweep_dir, "--host", "127.0.0.1",
                               "--port", str(port), "--load_fast", "false"],
                              stdout=log, stderr=subprocess.STDOUT)
    browser = None
    try:
        base = f"http://127.0.0.1:{port}"
        groups = None
        for _ in range(120):
            time.sleep(0.5)
            if server.poll() is not None:
                fail("tensorboard exited: " + open(log.name).read()[-2000:])
            try:
                groups = post_json(base + "/data/plugin/hparams/session_groups", {
                    "experimentName": "", "startIndex": 0, "sliceSize": 100,
                    "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                                        "STATUS_RUNNING"],
                    "colParams": [{"hparam": n} for n in flag_names] +
                                 [{"metric": {"group": "model/eval", "tag": "accuracy"}}]})
            except OSError:
                continue
            if len(groups.get("sessionGroups", [])) == len(names) and all(
                    g.get("metricValues") for g in groups["sessionGroups"]):
                break
        served = groups.get("sessionGroups", []) if groups else []
        if len(served) != len(names):
            fail(f"TensorBoard's HParams plugin lists {len(served)} session groups, not "
                 f"{len(names)}: {json.dumps(groups)[:2000]}")
        if not all(g.get("metricValues") for g in served):
            fail("a session group has no eval accuracy: " + json.dumps(served)[:2000])
        print(f"tensorboard: {len(served)} session groups with their eval accuracy")

        # 3. Headless Chromium renders the dashboard.
        devtools_port = free_port()
        profile = tempfile.mkdtemp(prefix="chromium-")
        browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                    "--disable-dev-shm-usage", "--no-first-run",
                                    f"--user-data-dir={profile}", "--window-size=1400,900",
                                    f"--remote-debugging-port={devtools_port}",
                                    base + "/#hparams"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pages = []
        for _ in range(100):
            time.sleep(0.2)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{devtools_port}/json", timeout=5) as r:
                    pages = [p for p in json.loads(r.read()) if p.get("type") == "page"]
            except OSError:
                continue
            if pages:
                break
        if not pages:
            fail("headless Chromium's DevTools did not answer")
        tools = DevTools(pages[0]["webSocketDebuggerUrl"])
        # Every flag (a column) and every variant (a row, by its session's name).
        needed = flag_names + names + ["eval accuracy"]
        text = ""
        for _ in range(120):
            time.sleep(0.5)
            text = tools.call("Runtime.evaluate", expression=PAGE_TEXT,
                              returnByValue=True)["result"].get("value", "")
            if all(n in text for n in needed):
                break
        missing = [n for n in needed if n not in text]
        if missing:
            fail(f"the HParams dashboard does not show {missing}; its text: {text[:3000]}")
        if screenshot:
            time.sleep(1)
            png = tools.call("Page.captureScreenshot", format="png")["data"]
            with open(screenshot, "wb") as out:
                out.write(base64.b64decode(png))
            print(f"screenshot: {screenshot}")
        print(f"chromium: the HParams dashboard shows {flag_names} for {len(names)} variants")
    finally:
        if browser is not None:
            browser.kill()
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
