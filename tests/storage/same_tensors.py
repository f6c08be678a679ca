#!/usr/bin/env python3
"""Exits 0 when two safetensors files hold the same tensors, bit for bit (the metadata, which
names the run's own paths, is not compared). Standard library only."""
import json
import struct
import sys


def tensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    header.pop("__metadata__", None)
    body = data[8 + length :]
    return {
        name: (info["dtype"], info["shape"], body[info["data_offsets"][0] : info["data_offsets"][1]])
        for name, info in header.items()
    }


a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
if a.keys() != b.keys():
    sys.exit(f"different tensor names: {sorted(a.keys() ^ b.keys())[:5]}")
differ = [name for name in a if a[name] != b[name]]
if differ:
    sys.exit(f"{len(differ)} of {len(a)} tensors differ, e.g. {differ[:5]}")
print(f"{len(a)} tensors equal")
