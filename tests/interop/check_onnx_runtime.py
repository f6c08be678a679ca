"""ONNX Runtime runs our exported ONNX file; it must agree with our own classify.

    check_onnx_runtime.py --onnx=M.onnx --inputs=IN.npy --logits=OURS.npy [--max_prob_diff=1e-4]

runs ONNX Runtime (CPU) on the preprocessed images IN.npy (float32 [N,H,W,3] in [-1,1]) and
compares with the logits OURS.npy that `classify --logits_out` wrote for the same file.

Checks: the file's interface (input `images` float32 [N,H,W,3] with a symbolic batch; outputs
`probabilities` float32 [N,classes], `classes` int64 [N], `logits` float32 [N,classes]);
max |probabilities - softmax(OURS)| <= --max_prob_diff; `classes` equals argmax(OURS) for
every image; the batch is dynamic (each image alone gives the same outputs as in the batch).
Any failure raises (non-zero exit) saying what differs.
"""

import argparse
import sys

import numpy as np
import onnxruntime as ort


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def input_size(sess):
    (images,) = sess.get_inputs()
    if images.name != "images" or images.type != "tensor(float)":
        raise SystemExit(f"input is {images.name} {images.type}, expected images tensor(float)")
    n, h, w, c = images.shape
    if isinstance(n, int) or c != 3:
        raise SystemExit(f"input shape {images.shape}: expected [N,H,W,3] with a symbolic N")
    return h, w


def softmax(logits):
    z = logits.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def check(name, sess, inputs_path, logits_path, max_prob_diff):
    h, w = input_size(sess)
    names = [o.name for o in sess.get_outputs()]
    if names != ["probabilities", "classes", "logits"]:
        raise SystemExit(f"outputs are {names}, expected probabilities, classes, logits")
    images = np.load(inputs_path)
    ours = np.load(logits_path)
    if images.dtype != np.float32 or images.shape[1:] != (h, w, 3):
        raise SystemExit(f"{inputs_path} is {images.dtype} {images.shape}, the model takes [N,{h},{w},3]")
    probabilities, classes, logits = sess.run(None, {"images": images})
    if probabilities.dtype != np.float32 or logits.dtype != np.float32:
        raise SystemExit(f"output dtypes {probabilities.dtype}, {logits.dtype}: expected float32")
    if classes.dtype != np.int64 or classes.shape != (images.shape[0],):
        raise SystemExit(f"classes is {classes.dtype} {classes.shape}: expected int64 [N]")
    if probabilities.shape != ours.shape or logits.shape != ours.shape:
        raise SystemExit(f"ONNX Runtime gives {probabilities.shape}, classify gave {ours.shape}")

    prob_diff = float(np.abs(probabilities.astype(np.float64) - softmax(ours)).max())
    logit_diff = float(np.abs(logits.astype(np.float64) - ours).max())
    ours_top = ours.argmax(axis=1)
    top2 = np.sort(ours, axis=1)[:, -2:]
    margin = float((top2[:, 1] - top2[:, 0]).min())
    print(f"{name}: {images.shape[0]} images, {ours.shape[1]} classes: max |dprob| {prob_diff:.3g}, "
          f"max |dlogit| {logit_diff:.3g}, smallest top-1/top-2 logit margin {margin:.3g}")
    if not prob_diff <= max_prob_diff:
        raise SystemExit(f"max |dprob| {prob_diff} is over {max_prob_diff}")
    if not np.array_equal(classes, ours_top):
        raise SystemExit(f"ONNX Runtime classes {classes.tolist()} != ours {ours_top.tolist()}")
    if not np.array_equal(classes, probabilities.argmax(axis=1)):
        raise SystemExit("classes is not the argmax of probabilities")

    # Dynamic batch: each image alone.
    for i in range(images.shape[0]):
        p1, c1, _ = sess.run(None, {"images": images[i : i + 1]})
        if c1[0] != classes[i] or np.abs(p1[0] - probabilities[i]).max() > 1e-5:
            raise SystemExit(f"image {i} alone gives other outputs than in the batch")
    print(f"{name}: ONNX Runtime agrees with classify")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnx", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--logits", required=True)
    parser.add_argument("--max_prob_diff", type=float, default=1e-4)
    args = parser.parse_args()
    check(args.onnx, session(args.onnx), args.inputs, args.logits, args.max_prob_diff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
