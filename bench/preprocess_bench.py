#!/usr/bin/python3
"""torchvision peer for preprocess_bench: the same JPEGs (held in memory), PIL decode +
RandomResizedCrop(299) + RandomHorizontalFlip + ToTensor (train) or Resize(342) +
CenterCrop(299) + ToTensor (eval), one process per thread with torch.set_num_threads(1).
Prints "images/sec <n>" (wall) and "images/cpu_sec <n>" (per
second of CPU time, i.e. per core)."""
import argparse
import io
import multiprocessing as mp
import os
import time


def work(args):
    files, mode, passes, size, barrier = args
    import torch
    from PIL import Image
    from torchvision import transforms

    torch.set_num_threads(1)
    if mode == "train":
        transform = transforms.Compose([transforms.RandomResizedCrop(size),
                                        transforms.RandomHorizontalFlip(),
                                        transforms.ToTensor()])
    else:
        transform = transforms.Compose([transforms.Resize(int(size * 8 / 7)),
                                        transforms.CenterCrop(size),
                                        transforms.ToTensor()])
    barrier.wait()
    cpu_start = time.process_time()
    for _ in range(passes):
        for data in files:
            transform(Image.open(io.BytesIO(data)).convert("RGB"))
    return len(files) * passes, time.process_time() - cpu_start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="/tmp/ic_preprocess_bench")
    parser.add_argument("--mode", choices=["train", "eval"], default="train")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--size", type=int, default=299)
    args = parser.parse_args()
    names = sorted(n for n in os.listdir(args.dir) if n.endswith(".jpg"))
    files = [open(os.path.join(args.dir, n), "rb").read() for n in names]
    manager = mp.Manager()
    barrier = manager.Barrier(args.threads + 1)
    shares = [(files[t::args.threads], args.mode, args.passes, args.size, barrier)
              for t in range(args.threads)]
    with mp.Pool(args.threads) as pool:
        result = pool.map_async(work, shares)
        barrier.wait()  # every worker has imported torch and built its transform
        start = time.perf_counter()
        counts = result.get()
        seconds = time.perf_counter() - start
    images = sum(n for n, _ in counts)
    print("images/sec %.1f" % (images / seconds))
    print("images/cpu_sec %.1f" % (images / sum(cpu for _, cpu in counts)))


if __name__ == "__main__":
    main()
