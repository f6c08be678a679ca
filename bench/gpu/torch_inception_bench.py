#!/usr/bin/env python3
"""torchvision's inception_v3 training throughput, the peer for bench/gpu/train_bench.

Same work as ours: 299x299 synthetic batch resident on the GPU, main + 0.4 * aux
cross-entropy with label smoothing 0.1, RMSProp (decay 0.9, momentum 0.9, eps 1.0),
weight decay 4e-5, EMA of the weights (decay 0.995). channels_last; bf16 through
torch.autocast (fp32 master weights), fp32 with PyTorch's defaults (TF32 convolutions).
Prints one parseable line:
  RESULT torch precision=bfloat16 batch=128 images_per_sec=... step_ms=... peak_mib=...
"""
import argparse
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=["bfloat16", "float32"], default="bfloat16")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--compile", type=int, default=0, help="1: torch.compile the model")
    a = p.parse_args()

    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    model = torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=False,
                                            num_classes=1001)
    model = model.to(dev).to(memory_format=torch.channels_last).train()
    step_model = torch.compile(model) if a.compile else model
    opt = torch.optim.RMSprop(model.parameters(), lr=0.165 * a.batch / 256, alpha=0.9,
                              momentum=0.9, eps=1.0, weight_decay=4e-5)
    ema = [q.detach().clone() for q in model.parameters()]
    images = torch.rand(a.batch, 3, 299, 299, device=dev).mul_(2).sub_(1)
    images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(1, 1001, (a.batch,), device=dev)
    xent = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    use_bf16 = a.precision == "bfloat16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
            out = step_model(images)
            loss = xent(out.logits.float(), labels) + 0.4 * xent(out.aux_logits.float(), labels)
        loss.backward()
        opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(ema, list(model.parameters()), 1 - 0.995)
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    free, total = torch.cuda.mem_get_info()
    ips = a.batch * a.steps / seconds
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"{torch.cuda.get_device_name()}, loss {loss.item():.4f}, "
          f"max_allocated {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
    print(f"RESULT torch precision={a.precision} batch={a.batch} images_per_sec={ips:.1f} "
          f"step_ms={1e3 * seconds / a.steps:.2f} peak_mib={(total - free) / 2**20:.0f}")


if __name__ == "__main__":
    main()
