"""TensorFlow loads our SavedModel export and computes what classify computes.

    check_saved_model.py --case BASE X.npy L.npy N [--case ...]
                         [--jpeg_case BASE LJ.npy A.jpg,B.jpg,... ...]

Each case: BASE is an export_model / --export_dir base directory holding exactly one numbered export.
X.npy is a batch of preprocessed images [n, H, W, 3] in [-1, 1]; L.npy is what
`classify --logits_out` wrote for the same images with the same checkpoint; N the number of
classes. Checks, for each case:
  * tf.saved_model.load (TensorFlow 2, the loader of TF1 SavedModels) loads it; it has the
    signatures serving_default, taking exactly `images` float32 [None, H, W, 3], and classify,
    taking exactly `image_bytes` string [None]; both give exactly `classes` int64 [None] and
    `probabilities` float32 [None, N];
  * serving_default(images=X): max |probabilities - softmax(L)| <= 1e-4, max |log
    probabilities - log softmax(L)| <= 1e-3 (the relative error, which matters where 1001
    classes make every probability small), and classes == argmax(L) (where the two largest
    logits are not within 1e-4 of each other);
  * the TF1 loader (tf.compat.v1.saved_model.loader.load into a Session, the way TensorFlow
    Serving's C++ loader restores variables through the SaverDef) gives the same.
Each jpeg case: classify(image_bytes=the JPEG files' bytes) against LJ.npy, what `classify
--logits_out` wrote for the same files (its own decoding and evaluation preprocessing), with
the same tolerances.
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


def check_signature(key, signature, input_key, input_spec, num_classes):
    args, kwargs = signature.structured_input_signature
    if args or sorted(kwargs) != [input_key]:
        raise SystemExit(f"{key}: inputs {args} {sorted(kwargs)}, expected only {input_key}")
    spec = kwargs[input_key]
    if (spec.dtype, spec.shape.as_list()) != input_spec:
        raise SystemExit(f"{key}: {input_key} is {spec.dtype} {spec.shape}, expected {input_spec}")
    outputs = signature.structured_outputs
    if sorted(outputs) != ["classes", "probabilities"]:
        raise SystemExit(f"{key}: outputs {sorted(outputs)}, expected classes, probabilities")
    if outputs["classes"].dtype != tf.int64 or outputs["classes"].shape.as_list() != [None]:
        raise SystemExit(f"{key}: classes is {outputs['classes'].dtype} {outputs['classes'].shape}")
    p = outputs["probabilities"]
    if p.dtype != tf.float32 or p.shape.as_list() != [None, num_classes]:
        raise SystemExit(f"{key}: probabilities is {p.dtype} {p.shape}")


def the_export(export_dir):
    versions = [d for d in os.listdir(export_dir) if d.isdigit()]
    if len(versions) != 1 or len(os.listdir(export_dir)) != 1:
        raise SystemExit(f"{export_dir}: expected one numbered export, found "
                         f"{sorted(os.listdir(export_dir))}")
    return os.path.join(export_dir, versions[0])


def check_case(export_dir, inputs, logits_file, num_classes):
    export = the_export(export_dir)
    images = np.load(inputs).astype(np.float32)
    logits = np.load(logits_file)
    _, height, width, _ = images.shape

    loaded = tf.saved_model.load(export)
    if sorted(loaded.signatures.keys()) != ["classify", "serving_default"]:
        raise SystemExit(f"{export}: signatures {sorted(loaded.signatures.keys())}")
    check_signature("serving_default", loaded.signatures["serving_default"], "images",
                    (tf.float32, [None, height, width, 3]), num_classes)
    check_signature("classify", loaded.signatures["classify"], "image_bytes",
                    (tf.string, [None]), num_classes)
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


def check_jpeg_case(export_dir, logits_file, jpegs):
    export = the_export(export_dir)
    logits = np.load(logits_file)
    encoded = []
    for path in jpegs.split(","):
        with open(path, "rb") as f:
            encoded.append(f.read())
    loaded = tf.saved_model.load(export)
    out = loaded.signatures["classify"](image_bytes=tf.constant(encoded))
    check_outputs(f"{export}: classify(image_bytes)", out["classes"].numpy(),
                  out["probabilities"].numpy(), logits)

    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export)
        signature = meta.signature_def["classify"]
        classes, probabilities = session.run(
            [signature.outputs["classes"].name, signature.outputs["probabilities"].name],
            {signature.inputs["image_bytes"].name: encoded})
    check_outputs(f"{export}: classify(image_bytes), Session loader", classes, probabilities,
                  logits)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", nargs=4, action="append", default=[],
                        metavar=("EXPORT_DIR", "INPUTS", "LOGITS", "CLASSES"))
    parser.add_argument("--jpeg_case", nargs=3, action="append", default=[],
                        metavar=("EXPORT_DIR", "LOGITS", "JPEGS"))
    args = parser.parse_args()
    if not args.case and not args.jpeg_case:
        parser.error("give --case or --jpeg_case")
    for export_dir, inputs, logits, classes in args.case:
        check_case(export_dir, inputs, logits, int(classes))
    for export_dir, logits, jpegs in args.jpeg_case:
        check_jpeg_case(export_dir, logits, jpegs)


if __name__ == "__main__":
    sys.exit(main())
