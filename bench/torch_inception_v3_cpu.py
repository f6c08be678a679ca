#!/usr/bin/env python3
"""The PyTorch peer for bench/cpu_inception_v3.sh: torchvision's inception_v3 on the CPU.

Measures training (RMSProp, channels_last, aux logits on, label smoothing 0.1) and inference
images/sec at the given batch and threads, and prints one line per figure:
    torch train_images_per_sec=...
    torch infer_images_per_sec=...
Peak RSS is measured from outside (/usr/bin/time) by the calling script.
"""
import argparse
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--size", type=int, default=299)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--mode", choices=["train", "infer"], default="train")
    p.add_argument("--bf16", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=False,
                                            num_classes=1001)
    model = model.to(memory_format=torch.channels_last)
    x = torch.rand(a.batch, 3, a.size, a.size).to(memory_format=torch.channels_last) * 2 - 1
    y = torch.randint(1, 1001, (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    if a.mode == "train":
        model.train()
        opt = torch.optim.RMSprop(model.parameters(), lr=0.01, alpha=0.9, eps=1.0, momentum=0.9,
                                  weight_decay=4e-5)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
                out, aux = model(x)
                loss = loss_fn(out.float(), y) + 0.4 * loss_fn(aux.float(), y)
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
