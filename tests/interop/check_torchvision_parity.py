"""Logit parity with torchvision's SqueezeNet: our safetensors checkpoint's weights, loaded by
name into torchvision.models.squeezenet1_0 / 1_1, give the logits our classify gave.

  check_torchvision_parity.py --model=squeezenet1_1 --checkpoint=F.safetensors --images=x.npy
                              --logits=ours.npy --num_classes=10 [--tolerance=1e-5]

Runs on Debian's python3-torch and python3-torchvision (not the virtual environment). Our
"squeezenet1_1/features.3/squeeze/weights" [kh,kw,Ci,Co] is torchvision's
"features.3.squeeze.weight" [Co,Ci,kh,kw]; "biases" is ".bias". Every state_dict entry must be
set and every checkpoint variable of the network used; the logits must agree to
tolerance * max |logit|.
"""
import argparse
import json
import struct

import numpy as np
import torch
import torchvision

import logit_parity
from logit_parity import relative_difference


WHO = "torchvision parity"


def fail(message):
    logit_parity.fail(WHO, message)


def read_safetensors(path):
    with open(path, "rb") as f:
        (header_size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_size))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], np.float32).reshape(info["shape"])
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True, choices=["squeezenet1_0", "squeezenet1_1"])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--images", required=True)
    p.add_argument("--logits", required=True)
    p.add_argument("--num_classes", type=int, required=True)
    p.add_argument("--tolerance", type=float, default=1e-5)
    a = p.parse_args()

    net = getattr(torchvision.models, a.model)(num_classes=a.num_classes).eval()
    state = net.state_dict()
    tensors = read_safetensors(a.checkpoint)
    prefix = a.model + "/"
    used = set()
    for name, value in tensors.items():
        path, _, variable = name[len(prefix):].rpartition("/")
        if not name.startswith(prefix) or variable not in ("weights", "biases"):
            continue  # another network's, an optimizer slot or an EMA shadow
        ema = tensors.get(name + "/ExponentialMovingAverage")
        if ema is not None:
            value = ema
        key = path.replace("/", ".") + {"weights": ".weight", "biases": ".bias"}.get(variable, "?")
        if key not in state:
            fail("%s (as %s) is not in torchvision's state_dict" % (name, key))
        if variable == "weights":
            value = value.transpose(3, 2, 0, 1)  # HWIO -> OIHW
        if tuple(state[key].shape) != value.shape:
            fail("%s: shape %s, torchvision's %s" % (name, value.shape, tuple(state[key].shape)))
        state[key] = torch.from_numpy(np.array(value, np.float32, copy=True))
        used.add(key)
    left = sorted(set(state) - used)
    if left:
        fail("torchvision weights no checkpoint variable set: %s" % left[:8])
    net.load_state_dict(state)

    images = np.load(a.images)
    ours = np.load(a.logits)
    with torch.no_grad():
        theirs = net(torch.from_numpy(images.transpose(0, 3, 1, 2).copy())).numpy()
    relative = relative_difference(WHO, a.model, "%d tensors" % len(used), ours, theirs,
                                   a.tolerance)
    if not relative <= a.tolerance:
        fail("%s: logits differ by %.3g relative, more than %g" % (a.model, relative, a.tolerance))


if __name__ == "__main__":
    main()
