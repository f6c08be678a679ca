"""TensorFlow loads our SavedModel export and computes what classify computes.

    check_saved_model.py --case BASE X.npy L.npy N [--case ...]

Each case: BASE is an export_model / --export_dir base directory holding exactly one numbered export.
X.npy is a batch of preprocessed images [n, H, W, 3] in [-1, 1]; L.npy is what
`classify --logits_out` wrote for the same images with the same checkpoint; N the number of
classes. Checks, for each case:
  * tf.saved_model.load (TensorFlow 2, the loader of TF1 SavedModels) loads it; the
    signatures serving_default and classify take exactly `images` float32 [None, H, W, 3] and
    give exactly `classes` int64 [None] and `probabilities` float32 [None, N];
  * serving_default(images=X): max |probabilities - softmax(L)| <= 1e-4, max |log
    probabilities - log softmax(L)| <= 1e-3 (the relative error, which matters where 1001
    classes make every probability small), and classes == argmax(L) (where the two largest
    logits are not within 1e-4 of each other);
  * the TF1 loader (tf.compat.v1.saved_model.loader.load into a Session, the way TensorFlow
    Serving's C++ loader restores variables through the SaverDef) gives the same.
Any difference raises (non-zero exit) with what differs.
"""

import argparse
import os
import sys

import numpy as np
import tensorflow as tf

TOLERANCE = 1e-4
LOG_TOLERANCE = 1e-3


def softmax(logits):
    z = logits.astype(np.float64)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def check_outputs(where, classes, probabilities, logits):
    expected = softmax(logits)
    if probabilities.shape != expected.shape:
        raise SystemExit(f"{where}: probabilities {probabilities.shape}, logits {logits.shape}")
    delta = float(np.abs(probabilities.astype(np.float64) - expected).max())
    if delta > TOLERANCE:
        raise SystemExit(f"{where}: max |probabilities - softmax(classify's logits)| = {delta}")
    log_delta = float(np.abs(np.log(np.maximum(probabilities.astype(np.float64), 1e-30)) -
                             np.log(np.maximum(expected, 1e-30))).max())
    if log_delta > LOG_TOLERANCE:
        raise SystemExit(f"{where}: max |log probabilities - log softmax(logits)| = {log_delta}")
    top2 = np.sort(logits, axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > TOLERANCE
    argmax = logits.argmax(axis=1)
    if classes.dtype != np.int64 or not np.array_equal(classes[clear], argmax[clear]):
        raise SystemExit(f"{where}: classes {classes} ({classes.dtype}), classify's argmax {argmax}")
    print(f"{where}: {len(classes)} images, max |delta probability| = {delta:.3g}, "
          f"max |delta log probability| = {log_delta:.3g}, classes {classes.tolist()} as classify")


def check_signature(key, signature, height, width, num_classes):
    args, kwargs = signature.structured_input_signature
    if args or sorted(kwargs) != ["images"]:
        raise SystemExit(f"{key}: inputs {args} {sorted(kwargs)}, expected only 'images'")
    images = kwargs["images"]
    if images.dtype != tf.float32 or images.shape.as_list() != [None, height, width, 3]:
        raise SystemExit(f"{key}: images is {images.dtype} {images.shape}")
    outputs = signature.structured_outputs
    if sorted(outputs) != ["classes", "probabilities"]:
        raise SystemExit(f"{key}: outputs {sorted(outputs)}, expected classes, probabilities")
    if outputs["classes"].dtype != tf.int64 or outputs["classes"].shape.as_list() != [None]:
        raise SystemExit(f"{key}: classes is {outputs['classes'].dtype} {outputs['classes'].shape}")
    p = outputs["probabilities"]
    if p.dtype != tf.float32 or p.shape.as_list() != [None, num_classes]:
        raise SystemExit(f"{key}: probabilities is {p.dtype} {p.shape}")


def check_case(export_dir, inputs, logits_file, num_classes):
    versions = [d for d in os.listdir(export_dir) if d.isdigit()]
    if len(versions) != 1 or len(os.listdir(export_dir)) != 1:
        raise SystemExit(f"{export_dir}: expected one numbered export, found "
                         f"{sorted(os.listdir(export_dir))}")
    export = os.path.join(export_dir, versions[0])
    images = np.load(inputs).astype(np.float32)
    logits = np.load(logits_file)
    _, height, width, _ = images.shape

    loaded = tf.saved_model.load(export)
    if sorted(loaded.signatures.keys()) != ["classify", "serving_default"]:
        raise SystemExit(f"{export}: signatures {sorted(loaded.signatures.keys())}")
    for key in ("serving_default", "classify"):
        check_signature(key, loaded.signatures[key], height, width, num_classes)
    out = loaded.signatures["serving_default"](images=tf.constant(images))
    check_outputs(f"{export}: tf.saved_model.load", out["classes"].numpy(),
                  out["probabilities"].numpy(), logits)

    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export)
        signature = meta.signature_def["serving_default"]
        classes, probabilities = session.run(
            [signature.outputs["classes"].name, signature.outputs["probabilities"].name],
            {signature.inputs["images"].name: images})
    check_outputs(f"{export}: tf.compat.v1 Session loader", classes, probabilities, logits)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", nargs=4, action="append", required=True,
                        metavar=("EXPORT_DIR", "INPUTS", "LOGITS", "CLASSES"))
    args = parser.parse_args()
    for export_dir, inputs, logits, classes in args.case:
        check_case(export_dir, inputs, logits, int(classes))


if __name__ == "__main__":
    sys.exit(main())
