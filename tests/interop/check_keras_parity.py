"""Logit parity with Keras: our checkpoint's weights, loaded by name into the Keras application
model the network follows, give the logits our classify gave on the same images.

  check_keras_parity.py --model=densenet121 --checkpoint=DIR/model.ckpt-N --images=x.npy
                        --logits=ours.npy --num_classes=10 [--tolerance=1e-5]

Each variable of the checkpoint (its ExponentialMovingAverage shadow when it has one: what
classify evaluates) goes to exactly one Keras weight, and every Keras weight gets one, with
the same shape (the slim MobileNets' 1x1 logit convolution becomes MobileNetV2's Dense kernel).
Keras names its layers "conv1_conv"; ours are "densenet121/conv1/conv/kernel" or TF-slim's for
the MobileNets (translated by the tables below). Fails (non-zero exit, a message) on a weight
left over on either side, or logits whose max |difference| exceeds tolerance * max |logit|.
"""
import argparse
import re

import numpy as np
import tensorflow as tf

import logit_parity
from logit_parity import relative_difference


WHO = "keras parity"


def fail(message):
    logit_parity.fail(WHO, message)


# TF-slim MobileNet layer scopes -> Keras layer names.
def mobilenet_v1_layer(scope):
    if scope == "Conv2d_0":
        return "conv1"
    if scope == "Conv2d_0/BatchNorm":
        return "conv1_bn"
    m = re.fullmatch(r"Conv2d_(\d+)_(depthwise|pointwise)(/BatchNorm)?", scope)
    if m:
        kind = "dw" if m.group(2) == "depthwise" else "pw"
        return "conv_%s_%s%s" % (kind, m.group(1), "_bn" if m.group(3) else "")
    if scope == "Logits/Conv2d_1c_1x1":
        return "conv_preds"
    return None


def mobilenet_v2_layer(scope):
    fixed = {"Conv": "Conv1", "Conv/BatchNorm": "bn_Conv1", "Conv_1": "Conv_1",
             "Conv_1/BatchNorm": "Conv_1_bn", "Logits/Conv2d_1c_1x1": "predictions"}
    if scope in fixed:
        return fixed[scope]
    m = re.fullmatch(r"expanded_conv(?:_(\d+))?/(expand|depthwise|project)(/BatchNorm)?", scope)
    if not m:
        return None
    block = "expanded_conv" if m.group(1) is None else "block_%s" % m.group(1)
    return "%s_%s%s" % (block, m.group(2), "_BN" if m.group(3) else "")


SCOPES = {"mobilenet_v1": "MobilenetV1", "mobilenet_v2": "MobilenetV2"}

SLIM_VARIABLES = {"weights": "kernel", "depthwise_weights": "depthwise_kernel", "biases": "bias",
                  "gamma": "gamma", "beta": "beta", "moving_mean": "moving_mean",
                  "moving_variance": "moving_variance"}


def keras_key(model, name):
    """Our variable name -> (Keras layer name, Keras weight name)."""
    scope, _, variable = name.rpartition("/")
    top, _, rest = scope.partition("/")
    if model in ("mobilenet_v1", "mobilenet_v2"):
        table = mobilenet_v1_layer if model == "mobilenet_v1" else mobilenet_v2_layer
        layer = table(rest)
        return (layer, SLIM_VARIABLES.get(variable)) if layer else (None, None)
    # Keras-named networks: "<scope>/<layer with / for _>/<weight>"; match ignoring / vs _.
    return rest.replace("/", "_"), variable


def build(model, num_classes, side):
    apps = tf.keras.applications
    shape = (side, side, 3)
    common = dict(weights=None, classes=num_classes, input_shape=shape,
                  classifier_activation=None)
    if model == "densenet121":
        return apps.DenseNet121(**common)
    if model == "efficientnet_b0":
        return apps.EfficientNetB0(**common)
    if model == "mobilenet_v1":
        return apps.MobileNet(dropout=0.0, **common)
    if model == "mobilenet_v2":
        return apps.MobileNetV2(**common)
    fail("no Keras model for " + model)


def weight_name(w):
    return w.name.split("/")[-1].split(":")[0]


def make_identity(layer):
    """A Normalization layer (EfficientNet's) with mean 0 and variance 1."""
    for w in layer.weights:
        if weight_name(w) in ("mean", "variance"):
            w.assign(np.full(w.shape, 0.0 if weight_name(w) == "mean" else 1.0, w.dtype))
    layer.finalize_state()  # the layer's own mean and variance tensors, from the weights


def float64_logits(model, num_classes, inputs, values):
    """The same network and weights computed in float64."""
    import keras
    keras.config.set_dtype_policy("float64")
    exact_model = build(model, num_classes, inputs.shape[1])
    for layer in exact_model.layers:
        for w in layer.weights:
            key = (layer.name, weight_name(w))
            if key in values:
                w.assign(values[key].reshape(tuple(w.shape)).astype(np.float64))
        if isinstance(layer, tf.keras.layers.Normalization):
            make_identity(layer)
    return exact_model(inputs.astype(np.float64), training=False).numpy()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--images", required=True)
    p.add_argument("--logits", required=True)
    p.add_argument("--num_classes", type=int, required=True)
    p.add_argument("--tolerance", type=float, default=1e-5)
    a = p.parse_args()

    images = np.load(a.images)
    ours = np.load(a.logits)
    keras_model = build(a.model, a.num_classes, images.shape[1])
    reader = tf.train.load_checkpoint(a.checkpoint)
    # The network's variables: under its scope, not optimizer slots or EMA shadows.
    scope = SCOPES.get(a.model, a.model) + "/"
    slots = ("/ExponentialMovingAverage", "/RMSProp", "/RMSProp_1", "/Momentum", "/Adam",
             "/Adam_1")
    names = [n for n in reader.get_variable_to_shape_map()
             if n.startswith(scope) and not n.endswith(slots)]

    # Keras weights by (normalized layer name, weight name).
    targets = {}
    for layer in keras_model.layers:
        for w in layer.weights:
            targets[(layer.name, weight_name(w))] = w
    normalization = [l for l in keras_model.layers if isinstance(l, tf.keras.layers.Normalization)]

    assigned = {}  # Keras (layer, weight) -> the value set
    for name in sorted(names):
        layer_name, short = keras_key(a.model, name)
        if layer_name is None:
            fail("%s has no Keras layer" % name)
        key = (layer_name, short)
        if key not in targets and short == "depthwise_kernel":
            key = (layer_name, "kernel")  # Keras 3 names DepthwiseConv2D's weight "kernel"
        if key not in targets:
            fail("%s (as %s/%s) has no Keras weight" % (name, layer_name, short))
        ema = name + "/ExponentialMovingAverage"
        value = reader.get_tensor(ema if reader.has_tensor(ema) else name)
        variable = targets[key]
        if tuple(variable.shape) != value.shape:
            value = value.reshape(tuple(variable.shape))  # a 1x1 logit conv as a Dense kernel
        variable.assign(value)
        assigned[key] = value
    left = [k for k in targets
            if k not in assigned and not any(k[0] == l.name for l in normalization)]
    if left:
        fail("Keras weights no checkpoint variable set: %s" % left[:8])

    inputs = images
    if normalization:
        # EfficientNet's Rescaling(1/255) + Normalization: made the identity on 255 * x.
        for layer in normalization:
            make_identity(layer)
        inputs = images * 255.0
    theirs = keras_model(inputs, training=False).numpy()
    relative = relative_difference(WHO, a.model, "%d weights" % len(assigned), ours, theirs,
                                   a.tolerance)
    if relative <= a.tolerance:
        return
    # Keras' own float32 run strays from the exact (float64) network as well: where it strays
    # more than the tolerance, ours must be as close to float64 as Keras' float32 is.
    exact = float64_logits(a.model, a.num_classes, inputs, assigned)
    scale = float(np.max(np.abs(theirs)))
    ours_error = float(np.max(np.abs(ours - exact))) / scale
    keras_error = float(np.max(np.abs(theirs - exact))) / scale
    print("%s: %s: from float64 Keras: ours %.3g, Keras float32 %.3g (relative)"
          % (WHO, a.model, ours_error, keras_error))
    if not ours_error <= max(a.tolerance, keras_error):
        fail("%s: logits differ by %.3g relative, more than %g" % (a.model, relative, a.tolerance))


if __name__ == "__main__":
    main()
