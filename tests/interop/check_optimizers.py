"""Replays optimizer_trace's steps (tests/train/optimizer_trace.cc) with independent references
and compares the weights and slots after every step:
  adamw              torch.optim.AdamW (float32), the kernels in a group with the weight decay,
                     the biases and batch norm's in one without
  lars               NumPy (float64) from You, Gitman & Ginsburg 2017 as TensorFlow's
                     LARSOptimizer applies it, batch norm and biases skipped
  sgd, momentum, RMS NumPy (float64) of TensorFlow's GradientDescent, Momentum (and Nesterov)
                     and TF1 RMSProp updates, with the L2 gradient wd*w added to the kernels'
An array passes when |ours - reference| <= rtol * |reference| + rtol * max|reference| (the
array's own scale stands in where a value is a near-cancellation of larger terms).

  /usr/bin/python3 check_optimizers.py TRACE_DIR [--rtol 1e-6]
"""

import argparse
import json
import os
import sys

import numpy as np


def load(trace):
    with open(os.path.join(trace, "meta.json")) as f:
        meta = json.load(f)
    arrays = {
        name: np.load(os.path.join(trace, name + ".npy"))
        for name in ["w0", "grads", "weights"] + [s for s, _ in meta["slots"]]
    }
    return meta, arrays


def variables(meta):
    """(begin, end, decayed) of each variable in the arena."""
    out, begin = [], 0
    for size, decayed in meta["variables"]:
        out.append((begin, begin + size, decayed))
        begin += size
    return out


def decay_mask(meta):
    return np.concatenate([np.full(e - b, d) for b, e, d in variables(meta)])


def reference_tf(meta, arrays):
    """sgd, momentum, RMS: TensorFlow's updates in float64 on g + wd*w (the kernels)."""
    h, wd = meta["hyperparameters"], meta["weight_decay"]
    w = arrays["w0"].astype(np.float64)
    mask = decay_mask(meta)
    slots = {s: np.full(w.shape, init, np.float64) for s, init in meta["slots"]}
    out = {"weights": []}
    out.update({s: [] for s in slots})
    for lr, g in zip(meta["learning_rates"], arrays["grads"].astype(np.float64)):
        g = g + wd * w * mask
        name = meta["optimizer"]
        if name == "sgd":
            w = w - lr * g
        elif name == "momentum":
            m = h["momentum"]
            a = slots["Momentum"] = m * slots["Momentum"] + g
            w = w - (lr * g + lr * m * a) if meta["nesterov"] else w - lr * a
        elif name == "RMS":
            ms = slots["RMSProp"] = h["decay"] * slots["RMSProp"] + (1 - h["decay"]) * g * g
            mom = slots["RMSProp_1"] = (
                h["momentum"] * slots["RMSProp_1"] + lr * g / np.sqrt(ms + h["epsilon"]))
            w = w - mom
        else:
            raise ValueError(name)
        out["weights"].append(w)
        for s in slots:
            out[s].append(slots[s])
    return out


def reference_lars(meta, arrays):
    """LARS in float64: per decayed variable, trust = eeta*|w| / (|g| + wd*|w| + eps) (1 when
    either norm is 0), v = m*v + lr*trust*(g + wd*w); the others v = m*v + lr*g; w -= v."""
    h, wd = meta["hyperparameters"], meta["weight_decay"]
    w = arrays["w0"].astype(np.float64)
    v = np.zeros_like(w)
    out = {"weights": [], "LARSOptimizer": []}
    for lr, g in zip(meta["learning_rates"], arrays["grads"].astype(np.float64)):
        for b, e, decayed in variables(meta):
            gv, wv = g[b:e], w[b:e]
            if decayed:
                w_norm, g_norm = np.linalg.norm(wv), np.linalg.norm(gv)
                trust = 1.0
                if w_norm > 0 and g_norm > 0:
                    trust = h["eeta"] * w_norm / (g_norm + wd * w_norm + h["epsilon"])
                v[b:e] = h["momentum"] * v[b:e] + lr * trust * (gv + wd * wv)
            else:
                v[b:e] = h["momentum"] * v[b:e] + lr * gv
        w = w - v
        out["weights"].append(w.copy())
        out["LARSOptimizer"].append(v.copy())
    return out


def reference_adamw(meta, arrays):
    """torch.optim.AdamW on float32 tensors, one per variable, the kernels decayed."""
    import torch

    h, wd = meta["hyperparameters"], meta["weight_decay"]
    w0 = torch.from_numpy(arrays["w0"].copy())
    spans = variables(meta)
    params = [torch.nn.Parameter(w0[b:e].clone()) for b, e, _ in spans]
    groups = [
        {"params": [p for p, (_, _, d) in zip(params, spans) if d], "weight_decay": wd},
        {"params": [p for p, (_, _, d) in zip(params, spans) if not d], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=meta["learning_rates"][0],
                            betas=(h["beta1"], h["beta2"]), eps=h["epsilon"])
    out = {"weights": [], "Adam": [], "Adam_1": []}
    for lr, g in zip(meta["learning_rates"], arrays["grads"]):
        for group in opt.param_groups:
            group["lr"] = lr
        for p, (b, e, _) in zip(params, spans):
            p.grad = torch.from_numpy(g[b:e].copy())
        opt.step()
        out["weights"].append(torch.cat([p.detach() for p in params]).numpy().copy())
        out["Adam"].append(torch.cat([opt.state[p]["exp_avg"] for p in params]).numpy().copy())
        out["Adam_1"].append(
            torch.cat([opt.state[p]["exp_avg_sq"] for p in params]).numpy().copy())
    return out


def compare(name, ours, theirs, rtol):
    """Whether every step is within rtol; the worst |diff| and the worst |diff| / |ref| (over
    the values at least 1e-3 of the array's largest) over the steps."""
    ok, worst_abs, worst_rel = True, 0.0, 0.0
    for step, (a, b) in enumerate(zip(ours, theirs)):
        a, b = a.astype(np.float64), np.asarray(b, np.float64)
        diff = np.abs(a - b)
        scale = np.max(np.abs(b))
        worst_abs = max(worst_abs, float(diff.max()))
        # Relative to the value itself, where it is not a near-zero of the array.
        large = np.abs(b) >= 1e-3 * scale
        if scale > 0 and np.any(large):
            worst_rel = max(worst_rel, float((diff[large] / np.abs(b[large])).max()))
        if not np.all(diff <= rtol * np.abs(b) + rtol * scale):
            i = int(np.argmax(diff - rtol * np.abs(b)))
            print("  %s, step %d: element %d is %.9g, the reference %.9g" %
                  (name, step + 1, i, a[i], b[i]))
            ok = False
    return ok, worst_abs, worst_rel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace_dir")
    parser.add_argument("--rtol", type=float, default=1e-6)
    args = parser.parse_args()
    references = {"adamw": reference_adamw, "lars": reference_lars}
    failed = []
    for trace in sorted(os.listdir(args.trace_dir)):
        meta, arrays = load(os.path.join(args.trace_dir, trace))
        theirs = references.get(meta["optimizer"], reference_tf)(meta, arrays)
        for name, steps in theirs.items():
            ok, worst_abs, worst_rel = compare(trace + "/" + name, arrays[name], steps, args.rtol)
            print("check_optimizers: %-26s %d steps: max |diff| %.3g, max |diff|/|ref| %.3g%s" %
                  (trace + " " + name, len(steps), worst_abs, worst_rel, "" if ok else "  FAILED"))
            if not ok:
                failed.append(trace + "/" + name)
    if failed:
        print("check_optimizers: FAILED: " + ", ".join(failed))
        return 1
    print("check_optimizers: every trace matches its reference (rtol %g)" % args.rtol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
