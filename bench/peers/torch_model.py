#!/usr/bin/env python3
"""The PyTorch peer of the CPU benchmarks: a torchvision model on the CPU, random weights.

--model names one of ours (peer_common.MODELS: the torchvision network of the same
architecture, with our model's class count). Measures training (RMSProp with TF-slim's settings, as inception_bench
trains every model; channels_last; label smoothing 0.1; inception_v3 with its aux logits at
0.4) or inference images/sec at the given batch and threads, and prints one line:
    torch train_images_per_sec=...
    torch infer_images_per_sec=...
Peak RSS is measured from outside (/usr/bin/time) by the calling script.
"""
import argparse
import time

import torch
import torchvision

from peer_common import MODELS, add_run_arguments, models_of

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=models_of("torchvision"), default="inception_v3")
    add_run_arguments(p)
    p.add_argument("--mode", choices=["train", "infer"], default="train")
    p.add_argument("--bf16", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    constructor, classes = MODELS[a.model]["torchvision"], MODELS[a.model]["classes"]
    extra = {"aux_logits": True, "init_weights": False} if a.model == "inception_v3" else {}
    model = getattr(torchvision.models, constructor)(weights=None, num_classes=classes, **extra)
    aux_weight = 0.4 if a.model == "inception_v3" else 0.0
    model = model.to(memory_format=torch.channels_last)
    x = torch.rand(a.batch, 3, a.size, a.size).to(memory_format=torch.channels_last) * 2 - 1
    y = torch.randint(1, classes, (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    if a.mode == "train":
        model.train()
        opt = torch.optim.RMSprop(model.parameters(), lr=0.01, alpha=0.9, eps=1.0, momentum=0.9,
                                  weight_decay=4e-5)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
                out = model(x)
                if aux_weight:
                    out, aux = out
                    loss = loss_fn(out.float(), y) + aux_weight * loss_fn(aux.float(), y)
                else:
                    loss = loss_fn(out.float(), y)
            loss.backward()
            opt.step()
    else:
        model.eval()

        def step():
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
                model(x)

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dt = time.perf_counter() - t0
    tag = "train" if a.mode == "train" else "infer"
    print(f"torch {tag}_images_per_sec={a.batch * a.steps / dt:.3f}", flush=True)


if __name__ == "__main__":
    main()
