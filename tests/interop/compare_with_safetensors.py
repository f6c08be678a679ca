"""TensorFlow reads a model_dir's latest checkpoint and it must equal a safetensors file.

    compare_with_safetensors.py --model_dir=DIR --safetensors=FILE --step=N [--ignore_metadata=K]

Checks, with TensorFlow's own readers:
  * tf.train.latest_checkpoint(DIR) is DIR/model.ckpt-N and tf.train.get_checkpoint_state
    lists it;
  * tf.train.load_checkpoint lists exactly the safetensors file's tensors plus the metadata
    entry, each with the same dtype and shape, and every value is bit for bit the same;
  * global_step is an int64 scalar equal to N;
  * the metadata entry is a string scalar holding the file's __metadata__ as JSON (keys given
    with --ignore_metadata may differ: e.g. the flags, which name the model_dir);
  * tf.compat.v1.train.Saver restores every variable from the checkpoint (the RestoreV2 op,
    what a TensorFlow program resuming from it runs) to the same values.
The safetensors file is parsed here with numpy from its documented layout, independently of
inception.cpp's code. Any difference raises (non-zero exit) with what differs.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np
import tensorflow as tf

METADATA_KEY = "inception_cpp/metadata"
SAFETENSORS_DTYPES = {"F32": np.float32, "I64": np.int64, "I32": np.int32}


def load_safetensors(path):
    """(metadata, {name: numpy array}) of a safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (header_size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + header_size])
    data = blob[8 + header_size :]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = np.dtype(SAFETENSORS_DTYPES[info["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"])
    return metadata, tensors


def fail(message):
    raise SystemExit("compare_with_safetensors: " + message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--safetensors", required=True)
    parser.add_argument("--step", type=int, required=True)
    parser.add_argument("--ignore_metadata", action="append", default=[])
    args = parser.parse_args()

    expected_path = os.path.join(args.model_dir, "model.ckpt-%d" % args.step)
    latest = tf.train.latest_checkpoint(args.model_dir)
    if latest != expected_path:
        fail("tf.train.latest_checkpoint(%s) is %r, expected %r" % (args.model_dir, latest, expected_path))
    state = tf.train.get_checkpoint_state(args.model_dir)
    if expected_path not in [os.path.join(args.model_dir, p) if not os.path.isabs(p) else p
                             for p in state.all_model_checkpoint_paths]:
        fail("get_checkpoint_state does not list %s: %s" % (expected_path, state))

    reader = tf.train.load_checkpoint(latest)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    metadata, tensors = load_safetensors(args.safetensors)

    expected_names = set(tensors) | {METADATA_KEY}
    if set(shapes) != expected_names:
        fail("names differ: only in TensorFlow's reading %s; only in the safetensors file %s"
             % (sorted(set(shapes) - expected_names)[:10], sorted(expected_names - set(shapes))[:10]))
    for name, array in sorted(tensors.items()):
        if dtypes[name].as_numpy_dtype != array.dtype.type:
            fail("%s: dtype %s in TensorFlow, %s in the safetensors file" % (name, dtypes[name].name, array.dtype))
        if list(shapes[name]) != list(array.shape):
            fail("%s: shape %s in TensorFlow, %s in the safetensors file" % (name, shapes[name], list(array.shape)))
        value = reader.get_tensor(name)
        if value.dtype != array.dtype or value.shape != array.shape or value.tobytes() != array.tobytes():
            fail("%s: values differ" % name)

    if dtypes["global_step"] != tf.int64 or shapes["global_step"] != []:
        fail("global_step is %s %s, expected an int64 scalar" % (dtypes["global_step"].name, shapes["global_step"]))
    if int(reader.get_tensor("global_step")) != args.step:
        fail("global_step is %d, expected %d" % (reader.get_tensor("global_step"), args.step))

    if dtypes[METADATA_KEY] != tf.string or shapes[METADATA_KEY] != []:
        fail("%s is %s %s, expected a string scalar" % (METADATA_KEY, dtypes[METADATA_KEY].name, shapes[METADATA_KEY]))
    stored = json.loads(reader.get_tensor(METADATA_KEY).decode("utf-8"))
    for key in set(stored) | set(metadata):
        if key not in args.ignore_metadata and stored.get(key) != metadata.get(key):
            fail("metadata %s: %r in the checkpoint, %r in the safetensors file" % (key, stored.get(key), metadata.get(key)))
    if set(stored) != set(metadata):
        fail("metadata keys differ: %s vs %s" % (sorted(stored), sorted(metadata)))

    # What a TensorFlow program resuming from the checkpoint does: Saver.restore (RestoreV2).
    with tf.Graph().as_default():
        variables = {}
        for i, name in enumerate(sorted(shapes)):
            variables[name] = tf.compat.v1.Variable(
                tf.zeros(shapes[name], dtype=dtypes[name]), name="v%d" % i)
        saver = tf.compat.v1.train.Saver(var_list=variables)
        with tf.compat.v1.Session() as session:
            saver.restore(session, latest)
            restored = session.run(variables)
    for name, array in tensors.items():
        if restored[name].tobytes() != array.tobytes():
            fail("%s: Saver.restore gives other values" % name)
    if json.loads(restored[METADATA_KEY].decode("utf-8")) != stored:
        fail("Saver.restore gives another metadata string")

    print("compare_with_safetensors: TensorFlow %s reads %s: %d tensors bit for bit equal to %s, "
          "global_step %d, metadata %s" % (tf.__version__, latest, len(tensors), args.safetensors,
                                           args.step, sorted(stored)))


if __name__ == "__main__":
    sys.exit(main())
