#!/usr/bin/env python3
"""The ONNX Runtime and OpenVINO peers of the CPU benchmarks, on our ONNX export of a model.

The model is `inception_bench --model=M --mode=infer --write_onnx=PATH` (random weights, input
"images" NHWC f32 in [-1, 1], dynamic batch). Each runs inference only, at the given batch and threads:
    --runtime=onnxruntime --precision=float32   all graph optimizations, intra-op threads
    --runtime=openvino    --precision=float32   INFERENCE_PRECISION_HINT f32
    --runtime=openvino    --precision=default   OpenVINO's own choice for this CPU (printed)
    --runtime=openvino    --precision=int8      NNCF post-training quantization (nncf.quantize)
                                                over random images: its scales are for speed
                                                only, as ours are
Prints one line:
    <runtime> infer_images_per_sec=... precision=...
"""
import argparse
import contextlib
import sys
import time

import numpy as np

from peer_common import add_run_arguments


def onnxruntime_runner(a):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = a.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(a.onnx, options, providers=["CPUExecutionProvider"])
    return lambda x: session.run(["logits"], {"images": x}), "float32"


def openvino_runner(a, calibration):
    import openvino as ov

    core = ov.Core()
    model = core.read_model(a.onnx)
    model.reshape({"images": [a.batch, a.size, a.size, 3]})
    config = {"INFERENCE_NUM_THREADS": a.threads, "PERFORMANCE_HINT": "LATENCY"}
    if a.precision == "float32":
        config["INFERENCE_PRECISION_HINT"] = "f32"
    if a.precision == "int8":
        import nncf

        # NNCF's progress bars go to stdout, where the calling script reads our one line.
        with contextlib.redirect_stdout(sys.stderr):
            model = nncf.quantize(model, nncf.Dataset(calibration), subset_size=len(calibration))
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    hint = compiled.get_property("INFERENCE_PRECISION_HINT")  # an ov.Type: "f32", "bf16"...
    chosen = hint.get_type_name() if hasattr(hint, "get_type_name") else str(hint)
    return lambda x: request.infer({"images": x}), f"{a.precision}({chosen})"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--onnx", required=True)
    p.add_argument("--runtime", choices=["onnxruntime", "openvino"], required=True)
    p.add_argument("--precision", choices=["float32", "default", "int8"], default="float32")
    add_run_arguments(p)
    a = p.parse_args()
    if a.runtime == "onnxruntime" and a.precision != "float32":
        p.error("onnxruntime runs the float32 export only")

    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (a.batch, a.size, a.size, 3)).astype(np.float32)
    calibration = [rng.uniform(-1, 1, (a.batch, a.size, a.size, 3)).astype(np.float32)
                   for _ in range(2)]
    if a.runtime == "onnxruntime":
        run, precision = onnxruntime_runner(a)
    else:
        run, precision = openvino_runner(a, calibration)
    for _ in range(a.warmup):
        run(x)
    t0 = time.perf_counter()
    for _ in range(a.steps):
        run(x)
    dt = time.perf_counter() - t0
    print(f"{a.runtime} infer_images_per_sec={a.batch * a.steps / dt:.3f} precision={precision}",
          flush=True)


if __name__ == "__main__":
    main()
