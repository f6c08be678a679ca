#!/usr/bin/env python3
"""The TensorFlow peer of the CPU benchmarks: a Keras application model on the CPU.

--model names one of ours (peer_common.MODELS: the Keras application of the same architecture,
with our model's class count). Random weights, NHWC images in [-1, 1]. Training: RMSProp
(TF-slim's settings), label smoothing 0.1, one compiled train step (tf.function, jit off: XLA's CPU path is not what
TensorFlow users run). Inference: the model called with training=False in a tf.function.
--precision=bfloat16 sets the mixed_bfloat16 Keras policy (variables f32, compute bf16).
Prints one line:
    tensorflow <mode>_images_per_sec=...
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

from peer_common import MODELS, add_run_arguments, models_of  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=models_of("keras"), default="inception_v3")
    p.add_argument("--mode", choices=["train", "infer"], default="infer")
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32")
    add_run_arguments(p)
    a = p.parse_args()

    import tensorflow as tf
    import keras

    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    if a.precision == "bfloat16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    constructor, classes = MODELS[a.model]["keras"], MODELS[a.model]["classes"]
    model = getattr(keras.applications, constructor)(weights=None, classes=classes,
                                                     input_shape=(a.size, a.size, 3),
                                                     classifier_activation=None)
    x = tf.random.uniform((a.batch, a.size, a.size, 3), -1.0, 1.0)
    y = tf.random.uniform((a.batch,), 1, classes, dtype=tf.int32)
    if a.mode == "train":
        opt = keras.optimizers.RMSprop(learning_rate=0.01, rho=0.9, momentum=0.9, epsilon=1.0)
        loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
        labels = tf.one_hot(y, classes)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                logits = tf.cast(model(x, training=True), tf.float32)
                loss = loss_fn(labels, logits)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
    else:
        @tf.function
        def step():
            return model(x, training=False)

    for _ in range(a.warmup):
        step().numpy()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        out = step()
    out.numpy()
    dt = time.perf_counter() - t0
    print(f"tensorflow {a.mode}_images_per_sec={a.batch * a.steps / dt:.3f}", flush=True)


if __name__ == "__main__":
    main()
