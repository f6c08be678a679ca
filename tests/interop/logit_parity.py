"""What the parity checks share (check_keras_parity.py, check_torchvision_parity.py): failing
with a message, and comparing a reference framework's logits with ours. NumPy only, so it runs
in the virtual environment and on Debian's Python alike."""
import sys

import numpy as np


def fail(who, message):
    print("%s: FAILED: %s" % (who, message), file=sys.stderr)
    sys.exit(1)


def relative_difference(who, model, what, ours, theirs, tolerance):
    """max |theirs - ours| / max |theirs|, printed with `what` (how many weights were loaded).
    Fails when the shapes differ, when the logits are all zero, or when the images' logits
    hardly differ from each other: a body that ignored its input (logits = biases) would
    otherwise pass."""
    if theirs.shape != ours.shape:
        fail(who, "logits shapes differ: theirs %s, ours %s" % (theirs.shape, ours.shape))
    spread = float(np.max(np.abs(ours - ours.mean(axis=0))))
    if not spread > 100 * tolerance * float(np.max(np.abs(ours))):
        fail(who, "the images' logits differ by only %.3g: nothing depends on the image" % spread)
    scale = float(np.max(np.abs(theirs)))
    if not scale > 0:
        fail(who, "all logits are zero: nothing was compared")
    diff = float(np.max(np.abs(theirs - ours)))
    print("%s: %s: %s; max |dlogit| %.3g of max |logit| %.3g (%.3g relative)"
          % (who, model, what, diff, scale, diff / scale))
    return diff / scale
