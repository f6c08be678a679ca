"""TensorFlow writes a checkpoint of variables named as ours, for inception.cpp to read.

    write_with_tensorflow.py --source=PREFIX --model_dir=DIR --step=N [--model_variables_only]

Reads the checkpoint at PREFIX (one of ours) with tf.train.load_checkpoint for its names,
shapes and dtypes, then makes one variable per tensor with OTHER values (float32 v -> 0.25 -
v / 2, or 1.5 v + 0.125 where values must stay positive: variances and RMSProp's mean squares;
global_step = N; the metadata string copied so our trainer accepts the model) and saves
them with tf.compat.v1.train.Saver (V2 format, absolute paths in DIR/checkpoint, a .meta
graph beside it), as a TensorFlow training program would. With --model_variables_only it
writes only the network's variables (no optimizer slots, moving averages, global_step or
metadata), as a published TF-slim checkpoint such as inception_v3.ckpt holds them.
"""

import argparse
import os
import sys

import numpy as np
import tensorflow as tf

METADATA_KEY = "inception_cpp/metadata"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--step", type=int, required=True)
    parser.add_argument("--model_variables_only", action="store_true")
    args = parser.parse_args()

    reader = tf.train.load_checkpoint(args.source)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    changed = 0
    with tf.Graph().as_default():
        variables = {}
        for i, name in enumerate(sorted(shapes)):
            if args.model_variables_only and (
                    name in ("global_step", METADATA_KEY) or name.endswith("/RMSProp")
                    or name.endswith("/RMSProp_1") or name.endswith("/ExponentialMovingAverage")):
                continue
            value = reader.get_tensor(name)
            if name == "global_step":
                value = np.int64(args.step)
            elif dtypes[name] == tf.float32:
                if "moving_variance" in name or name.endswith("/RMSProp"):
                    new = (value * np.float32(1.5) + np.float32(0.125)).astype(np.float32)
                else:
                    new = (np.float32(0.25) - value / np.float32(2)).astype(np.float32)
                changed += int(np.count_nonzero(new != value))
                value = new
            elif name != METADATA_KEY:
                raise SystemExit("write_with_tensorflow: unexpected %s %s" % (name, dtypes[name].name))
            variables[name] = tf.compat.v1.Variable(value, dtype=dtypes[name], name="v%d" % i)
        saver = tf.compat.v1.train.Saver(var_list=variables)  # write_version=V2
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            path = saver.save(session, os.path.join(args.model_dir, "model.ckpt"), global_step=args.step)
    if changed == 0:
        raise SystemExit("write_with_tensorflow: no value differs from the source checkpoint")
    print("write_with_tensorflow: TensorFlow %s wrote %s (%d tensors, %d values changed)"
          % (tf.__version__, path, len(variables), changed))


if __name__ == "__main__":
    sys.exit(main())
