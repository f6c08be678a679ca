#!/usr/bin/env python3
"""An HTTP proxy between a program and the storage emulator that fails on purpose.

usage: fault_proxy.py --port P --upstream 127.0.0.1:Q --rules RULES.json --log LOG

RULES.json is re-read at every request, so a test can change the faults while a program
runs. It holds a list of rules, tried in order; each rule whose "match" (a substring of
"METHOD path?query") matches a request counts it (n = 1, 2, ... per rule), and the first one
whose count says so acts:
  {"match": "/o", "action": "503", "every": 3}         every 3rd matching request gets a 503
  {"match": "PUT", "action": "reset", "first": 2}      the first 2 are dropped unanswered (RST)
  {"match": "alt=media", "action": "stall", "seconds": 5, "every": 4}  answer after 5 s
  {"match": "model.ckpt", "action": "503"}             every matching request fails
Each request is logged as "METHOD path status-or-action" to LOG.
"""
import argparse
import http.client
import http.server
import json
import os
import socket
import struct
import threading
import time

counters = {}
counters_lock = threading.Lock()


def load_rules(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return []


def decide(request_line, rules):
    for index, rule in enumerate(rules):
        if rule.get("match", "") not in request_line:
            continue
        with counters_lock:
            key = (index, json.dumps(rule, sort_keys=True))
            counters[key] = counters.get(key, 0) + 1
            n = counters[key]
        if "first" in rule and n > rule["first"]:
            continue
        if "every" in rule and n % rule["every"] != 0:
            continue
        return rule
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def note(self, what):
        with open(self.server.log_path, "a") as f:
            f.write(f"{self.command} {self.path} {what}\n")

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        rule = decide(f"{self.command} {self.path}", load_rules(self.server.rules_path))
        action = rule.get("action") if rule else None
        if action == "reset":
            self.note("reset")
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if action == "503":
            self.note("503")
            payload = b'{"error": {"code": 503, "message": "injected by fault_proxy"}}'
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        if action == "stall":
            self.note("stall")
            time.sleep(float(rule.get("seconds", 5)))
        upstream = http.client.HTTPConnection(self.server.upstream, timeout=600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        self.note(str(response.status))
        self.send_response(response.status)
        for k, v in response.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--rules", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.upstream = args.upstream
    server.rules_path = args.rules
    server.log_path = args.log
    print(f"fault_proxy: 127.0.0.1:{args.port} -> {args.upstream}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
